/** unthrottled: no throttling phase, every byte at full speed (bulk's rule). */
import { mediaRatePlan, type MediaRateOptions } from './media-rate.js';
import type { RateRule } from './rate-rule.js';

export function unthrottledRule(options: MediaRateOptions): RateRule {
  return {
    name: 'unthrottled',
    plan: ({ response }) => {
      // The media plan still says what rate the bytes carry (for records).
      const media = mediaRatePlan(response, options).media;
      return {
        startupEndOffset: response.rangeEnd + 1,
        ...media,
        media,
        reason: 'no throttling phase',
        headers: {},
      };
    },
  };
}
