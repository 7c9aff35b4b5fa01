/**
 * The trace replayer a lab with a trace starts in the background: it replays the trace on the
 * lab's link until the lab goes down (which kills this process).
 */
import { E2eError } from '../errors.js';
import { appendFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openLab, traceRatesFile, traceStartedFile, type TraceRateChange } from './lab.js';
import { replayTrace } from './trace-replay.js';

async function main(name: string): Promise<void> {
  const lab = await openLab(name);
  const trace = lab.state.spec.trace;
  if (trace === undefined) throw new E2eError('E2E_ERR_TRACE', `lab ${name} has no trace`);
  // The trace's clock starts here, with its first point applied (synchronously, in replayTrace's
  // first step); labUp waits for the file that says so, and dates the trace from it.
  const startedMs = Date.now();
  const ratesFile = join(lab.state.ports.stateDir, traceRatesFile);
  replayTrace(
    trace,
    {
      setDownRate: (rateBps) => {
        lab.setRate('down', rateBps);
        const change: TraceRateChange = { rateBps, appliedAtEpochMs: Date.now() };
        appendFileSync(ratesFile, `${JSON.stringify(change)}\n`);
      },
      setDownDelay: (delayMs) => lab.setDelay(delayMs, lab.state.spec.up.delayMs),
    },
    startedMs,
  );
  const file = join(lab.state.ports.stateDir, traceStartedFile);
  await writeFile(`${file}.tmp`, `${new Date(startedMs).toISOString()}\n`);
  await rename(`${file}.tmp`, file);
}

await main(process.argv[2] ?? '');
