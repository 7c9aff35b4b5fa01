/**
 * The trace replayer a lab with a trace starts in the background: it replays the trace on the
 * lab's link until the lab goes down (which kills this process).
 */
import { E2eError } from '../errors.js';
import { openLab } from './lab.js';
import { replayTrace } from './trace-replay.js';

async function main(name: string): Promise<void> {
  const lab = await openLab(name);
  const trace = lab.state.spec.trace;
  if (trace === undefined) throw new E2eError('E2E_ERR_TRACE', `lab ${name} has no trace`);
  // The trace's clock is the lab's: where this process starts late (a loaded host, a guest kernel
  // under emulation), the link still follows the trace from the moment the lab came up.
  replayTrace(
    trace,
    {
      setDownRate: (rateBps) => lab.setRate('down', rateBps),
      setDownDelay: (delayMs) => lab.setDelay(delayMs, lab.state.spec.up.delayMs),
    },
    Date.parse(lab.state.createdAt),
  );
}

await main(process.argv[2] ?? '');
