/**
 * The idle keep-alive benchmark's client, run as its own process beside a loopback server: opens
 * `connections` connections (a batch at a time, from several loopback source addresses, since one
 * address has ~28,000 ephemeral ports), sends one HEAD on each and keeps it open without another
 * request for `holdSec`, then says how many the server answered and how many it closed meanwhile.
 * Lines on stdout: `{"held":"start"}` when every connection is answered (the parent reads the server's
 * memory then), `{"held":"end"}` before closing them, and a last line with the counts.
 * `node idle-client.js '<json: IdleClientPlan>'`
 */
import { connect, type Socket } from 'node:net';

export interface IdleClientPlan {
  readonly host: string;
  readonly port: number;
  /** The path each connection asks for once (HEAD). */
  readonly path: string;
  readonly connections: number;
  readonly holdSec: number;
}

export interface IdleClientResult {
  readonly opened: number;
  /** Connections whose HEAD got a complete response head. */
  readonly answered: number;
  /** Connections refused, reset or timed out before their answer. */
  readonly failed: number;
  /** Answered connections the server closed during the hold. */
  readonly closedDuringHold: number;
  /** Seconds from the first connect to the last answer. */
  readonly openSec: number;
}

/** Connections opened at once: below the listen backlog (511), so SYN retries do not set the pace. */
const batchSize = 400;
/** Distinct source addresses per this many connections (127.0.0.x, x from 1). */
const connectionsPerSourceAddress = 20_000;

/**
 * The source address of the connection `index`: the kernel's choice for the first ~20,000 (a connect without a bind
 * finds a free port at once; binding an address first searches the port range for each, slower the more are taken),
 * then 127.0.0.2, 127.0.0.3, ...
 */
function sourceAddressOf(index: number): string | undefined {
  const address = Math.floor(index / connectionsPerSourceAddress);
  return address === 0 ? undefined : `127.0.0.${1 + address}`;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Opens one connection from `localAddress`, sends the HEAD, resolves with the socket once the response head is in. */
function openOne(plan: IdleClientPlan, localAddress: string | undefined): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = connect({
      host: plan.host,
      port: plan.port,
      ...(localAddress === undefined ? {} : { localAddress }),
    });
    let head = '';
    const fail = () => {
      socket.destroy();
      resolve(undefined);
    };
    socket.setTimeout(30_000, fail);
    socket.once('error', fail);
    socket.once('connect', () =>
      socket.write(`HEAD ${plan.path} HTTP/1.1\r\nHost: ${plan.host}\r\nConnection: keep-alive\r\n\r\n`),
    );
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.setTimeout(0);
      socket.removeListener('error', fail);
      if (!head.startsWith('HTTP/1.1 200')) return fail();
      resolve(socket);
    };
    socket.on('data', onData);
  });
}

async function run(plan: IdleClientPlan): Promise<void> {
  const startMs = performance.now();
  const sockets: Socket[] = [];
  let failed = 0;
  for (let first = 0; first < plan.connections; first += batchSize) {
    const batch = Array.from({ length: Math.min(batchSize, plan.connections - first) }, (_, i) =>
      openOne(plan, sourceAddressOf(first + i)),
    );
    for (const socket of await Promise.all(batch)) {
      if (socket === undefined) failed++;
      else sockets.push(socket);
    }
    if (first % 5000 === 0)
      process.stderr.write(`  idle client: ${first + batch.length} of ${plan.connections} opened\n`);
  }
  const openSec = (performance.now() - startMs) / 1000;
  let closedDuringHold = 0;
  let holding = true;
  for (const socket of sockets) {
    socket.on('error', () => undefined);
    socket.once('close', () => {
      if (holding) closedDuringHold++;
    });
  }
  process.stdout.write(`${JSON.stringify({ held: 'start' })}\n`);
  await sleep(plan.holdSec * 1000);
  process.stdout.write(`${JSON.stringify({ held: 'end' })}\n`);
  holding = false;
  for (const socket of sockets) socket.destroy();
  const result: IdleClientResult = {
    opened: plan.connections,
    answered: sockets.length,
    failed,
    closedDuringHold,
    openSec,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

await run(JSON.parse(process.argv[2] ?? '{}') as IdleClientPlan);
