/**
 * Replaying a bandwidth trace on a link: each point's downlink rate (and delay, where the trace
 * has it) at its time, looping, until stopped. The lab's background replayer (replay-main.ts) and
 * `trickle router` both drive their link with it.
 */
import { traceAt, type Trace } from '@trickle/player-sim/traces';

export interface TraceTarget {
  setDownRate(rateBps: number): void;
  setDownDelay(delayMs: number): Promise<void>;
}

/**
 * Replays `trace` on `target` from `startedMs` (epoch ms; default now): a replayer that starts
 * after its trace's time zero joins it where it is. The returned function stops it.
 */
export function replayTrace(trace: Trace, target: TraceTarget, startedMs = Date.now()): () => void {
  let lastRate = Number.NaN;
  let lastDelay = Number.NaN;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const step = async () => {
    if (stopped) return;
    const elapsedMs = Date.now() - startedMs;
    const point = traceAt(trace, elapsedMs);
    if (point.rateBps !== lastRate) {
      // A TBF cannot run at 0: a zero-bandwidth gap is emulated by a trickle of 8 kbit/s.
      target.setDownRate(Math.max(8_000, point.rateBps));
      lastRate = point.rateBps;
    }
    if (point.delayMs !== undefined && point.delayMs !== lastDelay) {
      await target.setDownDelay(point.delayMs);
      lastDelay = point.delayMs;
    }
    if (stopped) return;
    const inPass = elapsedMs % trace.durationMs;
    const next = trace.points.find((p) => p.atMs > inPass)?.atMs ?? trace.durationMs;
    timer = setTimeout(() => void step(), Math.max(1, next - inPass));
  };
  void step();
  return () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
  };
}
