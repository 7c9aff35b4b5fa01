/** The QoE figures as the `sim` and `e2e` commands print them (same definitions, same lines). */
import type { Aggregates } from '@trickle/player-sim';

type SharedFigures = Pick<
  Aggregates,
  'rebufferChance' | 'rebufferFrequency' | 'rebufferRatio' | 'startupDelayMs' | 'meanBitrateBps' | 'switchesPerMinute'
>;

export function describeQoe(sessionsLine: string, figures: SharedFigures, extraLines: readonly string[]): string {
  const ms = (v: number | null) => (v === null || Number.isNaN(v) ? '-' : `${Math.round(v)} ms`);
  return [
    `sessions            ${sessionsLine}`,
    `rebuffer chance     ${figures.rebufferChance.toFixed(1)} % of sessions`,
    `rebuffer frequency  ${figures.rebufferFrequency.toFixed(5)} per session-second ` +
      `(${(figures.rebufferFrequency * 3600).toFixed(2)} per hour)`,
    `rebuffer ratio      ${(figures.rebufferRatio * 100).toFixed(2)} % of session time`,
    `startup delay       mean ${ms(figures.startupDelayMs.mean)}, ` +
      `p50 ${ms(figures.startupDelayMs.p50)}, p95 ${ms(figures.startupDelayMs.p95)}`,
    `mean bitrate        ${(figures.meanBitrateBps / 1e6).toFixed(3)} Mbit/s`,
    `switches            ${figures.switchesPerMinute.toFixed(2)} per minute`,
    ...extraLines,
  ].join('\n');
}
