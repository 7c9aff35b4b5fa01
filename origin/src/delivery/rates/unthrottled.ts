/** unthrottled: no throttling phase, every byte at full speed (bulk's rule). */
import { mediaRatesOf } from './media-rate.js';
import type { RateRule } from './rate-rule.js';

/** Shared: bulk adds no header, and a plan per response needs no object of its own for that. */
const noHeaders: Readonly<Record<string, string>> = Object.freeze({});

export function unthrottledRule(): RateRule {
  return {
    name: 'unthrottled',
    plan: ({ response }) => {
      // The media's rate of the bytes, for records (no plan of the media rule: its startup end and reason go unused).
      const media = mediaRatesOf(response);
      return {
        startupEndOffset: response.rangeEnd + 1,
        rateAt: media.rateAt,
        stepsWithin: media.stepsWithin,
        media,
        reason: 'no throttling phase',
        headers: noHeaders,
      };
    },
  };
}
