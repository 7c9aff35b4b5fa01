/**
 * The paced-flow benchmark's client, run as its own process (in the lab's player namespace, or
 * beside a loopback server): opens every flow at once, lets them settle, then counts each flow's
 * bytes over the window. Lines on stdout: `{"window":"start"}` and `{"window":"end"}` when counting
 * starts and stops (the parent reads the server's CPU then), and a last line with every flow's bytes
 * and where in its file the window began (a paced flow's aim there is the media's, block by block),
 * and each flow's span of whole bursts in the window (burst-span.ts).
 * `node flow-client.js '<json: { flows: [{ url, count }], settleSec, seconds }>'`
 */
import { Agent, request, type ClientRequest } from 'node:http';
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
      const req = request(url, { agent }, (res) => {
        if (res.statusCode !== 200) fail(`status ${res.statusCode}`);
        res.on('data', (chunk: Buffer) => {
          bursts.chunk(performance.now(), offsets[index]! + counters[index]!, counting);
          if (counting) counters[index]! += chunk.length;
          else if (!ended) offsets[index]! += chunk.length;
        });
        res.on('error', () => undefined);
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (!ended) fail(error.code ?? error.message);
      });
      req.end();
      requests.push(req);
    }
  }
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
