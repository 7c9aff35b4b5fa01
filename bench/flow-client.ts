/**
 * The paced-flow benchmark's client, run as its own process (in the lab's player namespace, or beside a loopback
 * server): opens every flow (1,000 at a time, a batch once the one before is answered), lets them settle, then counts
 * each flow's bytes over the window. Lines on stdout: `{"opened":true}` once its flows are open (it then waits for a
 * line on stdin before it lets them settle), `{"window":"start"}` and `{"window":"end"}` when counting starts and
 * stops (the parent reads the server's CPU then), and a last line with every flow's bytes and where in its file the
 * window began (a paced flow's aim there is the media's, block by block), and each flow's span of whole bursts in the
 * window (burst-span.ts).
 * `node flow-client.js '<json: { flows: [{ url, count }], settleSec, seconds }>'`
 */
import { once } from 'node:events';
import { Agent, request, type ClientRequest } from 'node:http';
import { createInterface } from 'node:readline';
import { BurstSpanMeter, type BurstSpan } from './burst-span.js';

export interface FlowClientPlan {
  readonly flows: readonly { readonly url: string; readonly count: number }[];
  readonly settleSec: number;
  readonly seconds: number;
}

export interface FlowClientResult {
  readonly elapsedSec: number;
  /** Bytes each flow received in the window, by url, in opening order. */
  readonly bytesByUrl: Record<string, number[]>;
  /** Bytes each flow had received before the window (its offset in the file then), by url, same order. */
  readonly offsetsByUrl: Record<string, number[]>;
  /** Each flow's whole bursts in the window, by url, same order: null where fewer than two bursts began in it. */
  readonly burstSpansByUrl: Record<string, (BurstSpan | null)[]>;
  readonly failedFlows: number;
  /** Why flows failed: an error code (ECONNRESET, ...) or `status <n>`, with how many. */
  readonly failures: Record<string, number>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A batch's flows answered, or a server that has not answered them within 10 s (its flows then count as they go). */
const answeredOrLate = (batch: readonly Promise<void>[]) => Promise.race([Promise.all(batch), sleep(10_000)]);

async function run(plan: FlowClientPlan): Promise<void> {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  let counting = false;
  let ended = false;
  let failedFlows = 0;
  const failures: Record<string, number> = {};
  const fail = (reason: string) => {
    failedFlows++;
    failures[reason] = (failures[reason] ?? 0) + 1;
  };
  const bytesByUrl: Record<string, number[]> = {};
  const offsetsByUrl: Record<string, number[]> = {};
  const burstMetersByUrl: Record<string, BurstSpanMeter[]> = {};
  const requests: ClientRequest[] = [];
  // Flows open in batches, each once the one before has its response headers: a connection that has connected may
  // still wait in the server's accept queue (a backlog of 4,096 at most here), and two clients opening 5,000 each
  // at once, or in batches of 1,000 that waited only to connect, had 4,000-7,500 handshakes dropped and retried up
  // to 63 s later, inside the window.
  const openBatch = 1000;
  let batch: Promise<void>[] = [];
  for (const { url, count } of plan.flows) {
    bytesByUrl[url] ??= [];
    offsetsByUrl[url] ??= [];
    burstMetersByUrl[url] ??= [];
    const counters = bytesByUrl[url];
    const offsets = offsetsByUrl[url];
    for (let i = 0; i < count; i++) {
      const index = counters.push(0) - 1;
      offsets.push(0);
      const bursts = new BurstSpanMeter();
      burstMetersByUrl[url].push(bursts);
      let answered: () => void = () => undefined;
      batch.push(new Promise((resolve) => (answered = resolve)));
      const req = request(url, { agent }, (res) => {
        answered();
        if (res.statusCode !== 200) fail(`status ${res.statusCode}`);
        res.on('data', (chunk: Buffer) => {
          bursts.chunk(performance.now(), offsets[index]! + counters[index]!, counting);
          if (counting) counters[index]! += chunk.length;
          else if (!ended) offsets[index]! += chunk.length;
        });
        res.on('error', () => undefined);
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        answered();
        if (!ended) fail(error.code ?? error.message);
      });
      req.end();
      requests.push(req);
      if (batch.length === openBatch) {
        await answeredOrLate(batch);
        batch = [];
      }
    }
  }
  await answeredOrLate(batch);
  // Every client's flows open before any settles: the parent says go once all have, so their windows coincide (the
  // server's CPU is read over them, and a window that holds another client's opening counts its handshakes too).
  process.stdout.write(`${JSON.stringify({ opened: true })}\n`);
  const lines = createInterface({ input: process.stdin });
  await once(lines, 'line');
  lines.close();
  process.stdin.destroy();
  await sleep(plan.settleSec * 1000);
  counting = true;
  const startMs = performance.now();
  process.stdout.write(`${JSON.stringify({ window: 'start' })}\n`);
  await sleep(plan.seconds * 1000);
  counting = false;
  ended = true;
  const elapsedSec = (performance.now() - startMs) / 1000;
  process.stdout.write(`${JSON.stringify({ window: 'end' })}\n`);
  for (const req of requests) req.destroy();
  agent.destroy();
  const burstSpansByUrl = Object.fromEntries(
    Object.entries(burstMetersByUrl).map(([url, meters]) => [url, meters.map((meter) => meter.span())]),
  );
  const result: FlowClientResult = { elapsedSec, bytesByUrl, offsetsByUrl, burstSpansByUrl, failedFlows, failures };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await run(JSON.parse(process.argv[2] ?? '{}') as FlowClientPlan);
