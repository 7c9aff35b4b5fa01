/**
 * The trace replayer a lab with a trace starts in the background: it applies each trace point's
 * downlink rate (and delay, where given) at its time, looping, until the lab goes down.
 */
import { E2eError } from '../errors.js';
import { openLab } from './lab.js';
import { traceAt } from '@trickle/player-sim';

async function main(name: string): Promise<void> {
  const lab = await openLab(name);
  const trace = lab.state.spec.trace;
  if (trace === undefined) throw new E2eError('E2E_ERR_TRACE', `lab ${name} has no trace`);
  const startedMs = Date.now();
  let lastRate = Number.NaN;
  let lastDelay = Number.NaN;
  for (;;) {
    const elapsedMs = Date.now() - startedMs;
    const point = traceAt(trace, elapsedMs);
    if (point.rateBps !== lastRate) {
      // A TBF cannot run at 0: a zero-bandwidth gap is emulated by a trickle of 8 kbit/s.
      lab.setRate('down', Math.max(8_000, point.rateBps));
      lastRate = point.rateBps;
    }
    if (point.delayMs !== undefined && point.delayMs !== lastDelay) {
      await lab.setDelay(point.delayMs, lab.state.spec.up.delayMs);
      lastDelay = point.delayMs;
    }
    const inPass = elapsedMs % trace.durationMs;
    const next = trace.points.find((p) => p.atMs > inPass)?.atMs ?? trace.durationMs;
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, next - inPass)));
  }
}

await main(process.argv[2] ?? '');
