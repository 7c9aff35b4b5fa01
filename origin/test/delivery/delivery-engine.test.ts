/**
 * Delivery policies over real loopback sockets: block sizes on the wire, the startup phase cut
 * at the right byte, each keep-alive response with its own plan, aborts leaving nothing behind,
 * A/B groups per connection, flow records, /api/flows and /metrics. (Goodput and the cwnd clamp
 * need a path with a real RTT and MTU: e2e/test/policies.)
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createSocketControl, clampBackends, getMaxPacingRate, nativeInfo } from '@trickle/native';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import type { FlowRecord } from '../../src/delivery/flow-record.js';
import { startupEndByte } from '../../src/delivery/rate-plan.js';
import { buildAssetIndex } from '../../src/media/media-index.js';
import { MediaLibrary } from '../../src/media/library.js';
import { testMediaRoot } from '../helpers/media.js';

const nativeReady = (await nativeInfo()).addon.available;
const skip = nativeReady ? false : 'the native addon is not built (TCP_INFO and socket options are needed)';
if (!nativeReady && process.env.CI === 'true') throw new Error('CI must build the native addon');

interface Arrival {
  readonly atMs: number;
  readonly bytes: number;
}

interface Download {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly arrivals: Arrival[];
  readonly bytes: number;
}

/** GET with arrival times of every chunk; `abortAfterMs` destroys the request mid-body. */
function download(
  url: string,
  options: { headers?: Record<string, string>; agent?: http.Agent; abortAfterMs?: number } = {},
): Promise<Download> {
  return new Promise((resolve, reject) => {
    const startMs = performance.now();
    const request = http.get(url, { headers: options.headers, agent: options.agent ?? false }, (response) => {
      const arrivals: Arrival[] = [];
      let bytes = 0;
      let timer: NodeJS.Timeout | undefined;
      const finish = () => {
        if (timer !== undefined) clearTimeout(timer);
        resolve({ status: response.statusCode ?? 0, headers: response.headers, arrivals, bytes });
      };
      if (options.abortAfterMs !== undefined) {
        timer = setTimeout(() => {
          request.destroy();
          finish();
        }, options.abortAfterMs);
      }
      response.on('data', (chunk: Buffer) => {
        arrivals.push({ atMs: performance.now() - startMs, bytes: chunk.length });
        bytes += chunk.length;
      });
      response.on('end', finish);
      response.on('error', () => undefined);
    });
    request.on('error', (error) => (options.abortAfterMs === undefined ? reject(error) : undefined));
  });
}

/** Chunks closer together than `gapMs` belong to one burst (one application write on loopback). */
function bursts(arrivals: readonly Arrival[], gapMs: number): number[] {
  const sizes: number[] = [];
  let last = -Infinity;
  for (const arrival of arrivals) {
    if (arrival.atMs - last > gapMs || sizes.length === 0) sizes.push(arrival.bytes);
    else sizes[sizes.length - 1]! += arrival.bytes;
    last = arrival.atMs;
  }
  return sizes;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function flows(url: string, query = ''): Promise<FlowRecord[]> {
  const response = await fetch(`${url}/api/flows${query}`);
  return ((await response.json()) as { flows: FlowRecord[] }).flows;
}

/** Flow records are closed once the last byte is acknowledged: wait for `count` of them. */
async function waitForFlows(url: string, count: number, timeoutMs = 5000): Promise<FlowRecord[]> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const records = await flows(url);
    if (records.length >= count || performance.now() > deadline) return records;
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function startApp(
  delivery: Record<string, unknown>,
): Promise<{ app: FastifyInstance; url: string; serverSockets: Socket[] }> {
  const config = await loadConfig({ flags: { media: testMediaRoot(), logLevel: 'silent', delivery } });
  const app = await buildApp({
    config,
    logger: false,
    socketControl: createSocketControl(
      clampBackends['pacing-rate']({ native: undefined, fallbackReason: 'loopback test' }),
    ),
  });
  const serverSockets: Socket[] = [];
  app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, url, serverSockets };
}

describe('delivery policies over loopback', { skip }, () => {
  let progressiveName: string;
  let progressiveSize: number;
  let startupEnd: (fromByte: number, startupSec: number) => number;
  let mediaSecAt: (byte: number) => number;
  let byteAt: (sec: number) => number;
  let videoSegments: { file: string; startSec: number }[];
  const apps: FastifyInstance[] = [];

  before(async () => {
    const library = new MediaLibrary({
      root: testMediaRoot(),
      cacheMaxBytes: 0,
      cacheMaxFileBytes: 0,
      revalidateMs: 1000,
    });
    await library.open();
    const asset = (await library.getAsset('demo'))!;
    const index = await buildAssetIndex('demo', asset.dir, asset.files);
    await library.close();
    const progressive = index.progressive!;
    progressiveName = progressive.file;
    progressiveSize = progressive.sizeBytes;
    startupEnd = (fromByte, startupSec) => startupEndByte(progressive.byteTime, fromByte, startupSec);
    mediaSecAt = (byte) => progressive.byteTime.mediaTimeAtByteInterpolated(byte);
    byteAt = (sec) => progressive.byteTime.byteAtMediaTime(sec);
    const video = index.renditions.find((r) => r.kind === 'video')!;
    videoSegments = video.segments.map((s) => ({ file: s.file, startSec: s.startSec - video.segments[0]!.startSec }));
  });
  after(async () => {
    for (const app of apps) await app.close();
  });

  it('app-pacing writes 64 kB blocks and app-pacing-16k 16 kB blocks', async () => {
    const { app, url } = await startApp({ startupSec: 0, allowPolicyOverride: true });
    apps.push(app);
    const [large, small] = await Promise.all([
      download(`${url}/media/demo/${progressiveName}?policy=app-pacing`, { abortAfterMs: 2500 }),
      download(`${url}/media/demo/${progressiveName}?policy=app-pacing-16k`, { abortAfterMs: 2500 }),
    ]);
    const largeBursts = bursts(large.arrivals, 10).slice(1, -1);
    const smallBursts = bursts(small.arrivals, 10).slice(1, -1);
    assert.ok(
      largeBursts.length >= 4 && smallBursts.length >= 16,
      `bursts: ${largeBursts.length} and ${smallBursts.length}`,
    );
    assert.equal(median(largeBursts), 65_536, `64 kB bursts: ${largeBursts.join(' ')}`);
    assert.equal(median(smallBursts), 16_384, `16 kB bursts: ${smallBursts.join(' ')}`);
    // Same media, same bucket rate: the same bytes per second whatever the block size (within a block each).
    assert.ok(
      Math.abs(large.bytes - small.bytes) <= 65_536 + 16_384,
      `${large.bytes} vs ${small.bytes} bytes in 2.5 s`,
    );
  });

  it('sends startupSec of media at full speed, then throttles; a seek starts a new startup phase', async () => {
    const startupSec = 4;
    const { app, url } = await startApp({ startupSec, policy: 'app-pacing' });
    apps.push(app);
    const seekFrom = Math.floor(progressiveSize / 2);
    const [fromStart, fromMiddle] = await Promise.all([
      download(`${url}/media/demo/${progressiveName}`, { headers: { range: 'bytes=0-' }, abortAfterMs: 1500 }),
      download(`${url}/media/demo/${progressiveName}`, {
        headers: { range: `bytes=${seekFrom}-` },
        abortAfterMs: 1500,
      }),
    ]);
    const records = await waitForFlows(url, 2);
    for (const [result, from] of [
      [fromStart, 0],
      [fromMiddle, seekFrom],
    ] as const) {
      const expected = startupEnd(from, startupSec) - from;
      const record = records.find((r) => r.range.start === from)!;
      assert.equal(record.startup.bytes, expected, 'the server cut the startup phase at startupSec of media');
      assert.equal(record.completed, false);
      // On the wire: all of the startup phase within the 1.5 s download (paced, it would take over 3 s), and after it
      // no more than the bucket can release by the last arrival: it starts holding one block (the first throttled
      // block goes at once) and fills at headroom x R in media seconds, so the bytes after that block are at most
      // the fastest released block's pace rate x the time since the request was sent (throttling began after). An
      // upper bound the client's own read stalls cannot break (they delay bytes, never add them), unlike a bound on
      // gaps between arrivals (a stall bunched two blocks within 50 ms once).
      const headerBytes = result.arrivals[0]!.bytes < 1000 ? result.arrivals[0]!.bytes : 0;
      const bodyBytes = result.bytes - headerBytes;
      assert.ok(
        bodyBytes >= expected + 65_536,
        `startup ${expected} B and a first block not received in 1.5 s (${bodyBytes} B)`,
      );
      const lastArrivalMs = result.arrivals.at(-1)!.atMs;
      const paceMaxBps = record.paceRateBps!.max;
      const allowedAfterFirstBlockBytes = Math.ceil((paceMaxBps / 8) * (lastArrivalMs / 1000));
      assert.ok(
        bodyBytes - expected - 65_536 <= allowedAfterFirstBlockBytes,
        `${bodyBytes - expected} B after the startup's ${expected} B by ${lastArrivalMs.toFixed(0)} ms: over one block and ${allowedAfterFirstBlockBytes} B (${(paceMaxBps / 1e6).toFixed(2)} Mbit/s)`,
      );
      const unthrottledRestBytes = progressiveSize - from - expected;
      assert.ok(
        unthrottledRestBytes > 65_536 + allowedAfterFirstBlockBytes,
        `the check tells throttled from not: ${unthrottledRestBytes} B left after startup`,
      );
      console.log(
        `# from ${from}: ${bodyBytes - expected} B after startup by ${lastArrivalMs.toFixed(0)} ms, bound ${65_536 + allowedAfterFirstBlockBytes}, rest ${unthrottledRestBytes}`,
      );
    }
  });

  it('gives every keep-alive response its own plan and resets the socket after each', async () => {
    const { app, url, serverSockets } = await startApp({ startupSec: 0, allowPolicyOverride: true });
    apps.push(app);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const first = await download(`${url}/media/demo/${progressiveName}?policy=pacing`, {
      headers: { range: 'bytes=0-299999' },
      agent,
    });
    assert.equal(first.bytes, 300_000);
    const records1 = await waitForFlows(url, 1);
    const serverSocket = serverSockets.find((socket) => socket.remotePort === records1[0]!.client.port)!;
    assert.equal(getMaxPacingRate(serverSocket), null, 'SO_MAX_PACING_RATE lifted when the response ended');
    const second = await download(`${url}/media/demo/${progressiveName}?policy=bulk`, {
      headers: { range: 'bytes=0-299999' },
      agent,
    });
    assert.equal(second.bytes, 300_000);
    const records = await waitForFlows(url, 2);
    agent.destroy();
    const [a, b] = records;
    assert.equal(records1[0]!.policy, 'pacing');
    assert.equal(a!.connectionId, b!.connectionId);
    assert.equal(a!.backend, 'kernel-pacing');
    assert.ok(a!.throttling !== null && a!.throttling.bytes > 0);
    assert.equal(b!.policy, 'bulk');
    assert.equal(b!.throttling, null);
    assert.equal(b!.startup.bytes, 300_000, 'the second response has its own plan: all at full speed');
  });

  it('stops all work when clients abort: no timers, no active flows, gauge back to zero', async () => {
    const { app, url } = await startApp({ startupSec: 0.5, allowPolicyOverride: true });
    apps.push(app);
    const baselineTimers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    const policies = ['app-pacing', 'app-pacing-16k', 'trickle', 'pacing', 'cmcd', 'bulk'];
    const runs = Array.from({ length: 36 }, (_, i) =>
      download(`${url}/media/demo/${progressiveName}?policy=${policies[i % policies.length]}`, {
        abortAfterMs: 50 + ((i * 37) % 400),
      }),
    );
    await Promise.all(runs);
    const deadline = performance.now() + 3000;
    while (
      performance.now() < deadline &&
      (app.trickle.engine.stats().activeResponses > 0 || app.trickle.engine.stats().drainingResponses > 0)
    )
      await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(app.trickle.engine.stats(), { activeResponses: 0, drainingResponses: 0 });
    assert.equal(await app.trickle.metrics.activeFlowCount(), 0);
    const timers = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    assert.ok(timers <= baselineTimers, `timers: ${timers} now, ${baselineTimers} before`);
    const records = await flows(url);
    assert.equal(records.length, 36);
    const aborted = records.filter((r) => !r.completed);
    assert.ok(aborted.length >= 30, 'aborted responses are recorded as not completed');
    // The socket is gone when the client aborts: the record ends at the response's last TCP_INFO reading, not blind.
    const throttledAborted = aborted.filter((r) => r.throttling !== null && r.policy !== 'bulk');
    assert.ok(throttledAborted.length > 0);
    for (const record of throttledAborted)
      assert.notEqual(record.srttUs, null, `aborted ${record.policy} response has an end reading`);
    for (const record of aborted)
      assert.ok(
        record.client.port !== null && record.client.port > 0,
        'an aborted response still names its client (captures are matched by port)',
      );
  });

  it('assigns A/B groups per connection (seeded), with transport settings per group, and records them', async () => {
    const { app, url } = await startApp({
      startupSec: 0,
      ab: [
        { name: 'baseline1', policy: 'app-pacing', weight: 1, congestionControl: 'reno' },
        { name: 'baseline2', policy: 'app-pacing', weight: 1 },
        { name: 'fast', policy: 'bulk', weight: 2 },
      ],
    });
    apps.push(app);
    const announcedGroups: string[] = [];
    for (let i = 0; i < 24; i++) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      for (const range of ['bytes=0-9999', 'bytes=10000-19999']) {
        const response = await download(`${url}/media/demo/${progressiveName}`, { headers: { range }, agent });
        announcedGroups.push(/ab;desc="([^"]+)"/.exec(String(response.headers['server-timing']))?.[1] ?? 'none');
      }
      agent.destroy();
    }
    const records = await waitForFlows(url, 48);
    // Server-Timing tells each client its connection's group (in request order, as the records' ids are).
    assert.deepEqual(
      announcedGroups,
      [...records].sort((a, b) => a.id - b.id).map((r) => r.group),
    );
    const byConnection = new Map<number, Set<string>>();
    for (const record of records)
      byConnection.set(record.connectionId, (byConnection.get(record.connectionId) ?? new Set()).add(record.group!));
    assert.equal(byConnection.size, 24);
    for (const groups of byConnection.values())
      assert.equal(groups.size, 1, 'both responses of a connection are in one group');
    const groups = records.map((r) => r.group);
    for (const name of ['baseline1', 'baseline2', 'fast']) assert.ok(groups.includes(name), `group ${name} drawn`);
    for (const record of records) {
      assert.equal(record.policy, record.group === 'fast' ? 'bulk' : 'app-pacing');
      if (record.group === 'baseline1') assert.equal(record.congestionControl, 'reno');
    }
    // The same seed draws the same sequence on a fresh app.
    const again = await startApp({
      startupSec: 0,
      ab: [
        { name: 'baseline1', policy: 'app-pacing', weight: 1, congestionControl: 'reno' },
        { name: 'baseline2', policy: 'app-pacing', weight: 1 },
        { name: 'fast', policy: 'bulk', weight: 2 },
      ],
    });
    apps.push(again.app);
    for (let i = 0; i < 24; i++)
      await download(`${again.url}/media/demo/${progressiveName}`, { headers: { range: 'bytes=0-9999' } });
    const sequence = (list: FlowRecord[]) => [...new Map(list.map((r) => [r.connectionId, r.group])).values()];
    assert.deepEqual(sequence(await waitForFlows(again.url, 24)), sequence(records));
  });

  it(
    'counts only its own segments in each record of a keep-alive connection, other ' +
      'responses between them included',
    async () => {
      const { app, url } = await startApp({ policy: 'bulk' });
      apps.push(app);
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const range = (start: number) => ({ headers: { range: `bytes=${start}-${start + 999}` }, agent });
        await download(`${url}/media/demo/${progressiveName}`, range(0));
        // A manifest is not a media response: its bytes go out between two records on the same socket.
        await download(`${url}/media/demo/manifest.mpd`, { agent });
        await download(`${url}/media/demo/${progressiveName}`, range(1000));
        await download(`${url}/media/demo/${progressiveName}`, range(2000));
        const records = await waitForFlows(url, 3);
        assert.equal(new Set(records.map((r) => r.connectionId)).size, 1, 'one connection');
        // On loopback a 1000-byte response and its headers are one segment; a start reading left over
        // from before the manifest would count the manifest's segment too.
        assert.deepEqual(
          records.map((r) => r.dataSegmentsOut),
          [1, 1, 1],
          JSON.stringify(records.map((r) => r.startup)),
        );
        assert.ok(records.every((r) => r.drained));
      } finally {
        agent.destroy();
      }
    },
  );

  it('records every field of a flow, and serves /api/flows and /metrics', async () => {
    const { app, url } = await startApp({ startupSec: 0, policy: 'app-pacing' });
    apps.push(app);
    const before = Date.now();
    await download(`${url}/media/demo/${progressiveName}`, { headers: { range: 'bytes=0-199999' } });
    const [record] = await waitForFlows(url, 1);
    assert.equal(record!.asset, 'demo');
    assert.equal(record!.role, 'progressive');
    assert.deepEqual(record!.range, { start: 0, end: 199_999 });
    assert.equal(record!.bytes, 200_000);
    assert.equal(record!.completed, true);
    assert.equal(record!.drained, true);
    assert.equal(record!.status, 206);
    assert.equal(record!.backend, 'app');
    assert.ok(record!.srttUs! > 0 && record!.minRttUs! > 0);
    // Recorded, not asserted zero: under the parallel test phase's load a delayed loopback ACK lets
    // a tail loss probe fire (a retransmission; the clean-clone CI run of 641034b saw one).
    assert.ok(
      Number.isInteger(record!.retransmittedSegments) &&
        record!.retransmittedSegments! >= 0 &&
        record!.retransmittedSegments! <= record!.dataSegmentsOut!,
      `retransmissions ${record!.retransmittedSegments} of ${record!.dataSegmentsOut}`,
    );
    assert.ok(record!.throttling!.goodputBps! > 0);
    assert.ok(record!.targetRateBps!.min > 0 && record!.targetRateBps!.max >= record!.targetRateBps!.min);
    assert.ok(
      Math.abs(record!.paceRateBps!.mean / record!.targetRateBps!.mean - 1.25) < 0.01,
      `paced at 1.25 x R: ${JSON.stringify(record)}`,
    );
    assert.equal(record!.client.address, '127.0.0.1');
    assert.equal((await flows(url, `?since=${before}`)).length, 1);
    assert.equal((await flows(url, `?since=${Date.now() + 60_000}`)).length, 0);
    assert.equal((await fetch(`${url}/api/flows?since=yesterday`)).status, 400);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    for (const line of [
      'trickle_responses_total{policy="app-pacing",group="app-pacing",role="progressive",outcome="completed"} 1',
      'trickle_response_bytes_total{policy="app-pacing",group="app-pacing"} 200000',
      'trickle_active_paced_flows',
    ]) {
      assert.ok(metrics.includes(line), `metrics include ${line}`);
    }
    // The flow's srtt lands in the histogram's first bucket that holds it (on loopback usually under
    // 1 ms; under the parallel test phase's load a clean-clone CI run saw more).
    const buckets = [
      ...metrics.matchAll(
        /^trickle_srtt_seconds_bucket\{le="([^"]+)",policy="app-pacing",group="app-pacing"\} (\d+)$/gm,
      ),
    ].map((m) => ({ le: Number(m[1]), count: Number(m[2]) }));
    const holding = buckets.find((bucket) => record!.srttUs! / 1e6 <= bucket.le);
    assert.ok(
      holding !== undefined &&
        holding.count === 1 &&
        buckets.filter((bucket) => bucket.le < holding.le).every((bucket) => bucket.count === 0),
      `srtt ${record!.srttUs} us in ${JSON.stringify(buckets)}`,
    );
    assert.match(metrics, /^trickle_srtt_seconds_count\{policy="app-pacing",group="app-pacing"\} 1$/m);
    assert.match(metrics, /trickle_throttled_goodput_ratio_count\{policy="app-pacing",group="app-pacing"\} 1/);
    assert.match(metrics, /^trickle_retransmission_ratio_count\{policy="app-pacing",group="app-pacing"\} 1$/m);
    // Routes by their pattern (one series per route, not per file), with the status.
    assert.match(
      metrics,
      /^trickle_http_request_duration_seconds_count\{route="\/media\/:asset\/\*",status_code="206"\} 1$/m,
    );
    assert.match(metrics, /^trickle_http_request_duration_seconds_count\{route="\/api\/flows",status_code="400"\} 1$/m);
    // prom-client's defaults under their standard names, as stock Node.js dashboards expect.
    assert.match(metrics, /^process_cpu_seconds_total \d/m);
    assert.match(metrics, /^nodejs_eventloop_lag_p99_seconds \d/m);
  });

  it('answers an unknown ?policy= with 400 when overrides are allowed, ignores it otherwise', async () => {
    const allowed = await startApp({ allowPolicyOverride: true });
    const denied = await startApp({});
    apps.push(allowed.app, denied.app);
    const bad = await fetch(`${allowed.url}/media/demo/${progressiveName}?policy=warp`);
    assert.equal(bad.status, 400);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'ORIGIN_ERR_BAD_POLICY');
    const ignored = await download(`${denied.url}/media/demo/${progressiveName}?policy=warp`, {
      headers: { range: 'bytes=0-999' },
    });
    assert.equal(ignored.status, 206);
  });

  it(
    'cmcd: full speed at startup, the next rung x the buffer multiplier otherwise, ' +
      'announced in CMSD and Server-Timing',
    async () => {
      const { app, url } = await startApp({ policy: 'cmcd' });
      apps.push(app);
      const index = (await (await fetch(`${url}/api/assets/demo`)).json()) as {
        renditions: { kind: string; segments: { file: string }[] }[];
      };
      const video = index.renditions.find((r) => r.kind === 'video')!;
      const segment = video.segments[3]!.file;
      const startup = await download(`${url}/media/demo/${segment}?CMCD=${encodeURIComponent('su,bl=0')}`);
      assert.match(String(startup.headers['server-timing']), /full speed/);
      assert.equal(startup.headers['cmsd-dynamic'], undefined);
      const steady = await download(`${url}/media/demo/${segment}`, {
        headers: { 'cmcd-request': 'bl=30000', 'cmcd-object': 'br=400' },
      });
      const etpKbps = Number(/etp=(\d+)/.exec(String(steady.headers['cmsd-dynamic']))![1]);
      assert.ok(etpKbps > 400 * 1.5, `etp ${etpKbps} kbit/s lets the ABR see above 1.5 x 400 kbit/s`);
      assert.equal(steady.headers['cmsd-static'], 'ot=v,st=v');
      assert.match(String(steady.headers['server-timing']), /next rung/);
      assert.equal(steady.headers['timing-allow-origin'], '*', 'a player page on another origin may read it');
      // The viewer's own headers are kept from a shared cache's other viewers; the body stays cacheable.
      assert.match(
        String(steady.headers['cache-control']),
        /^public, max-age=\d+, immutable, private="server-timing, cmsd-dynamic"$/,
      );
    },
  );

  it('keeps a segment fully cacheable when nothing in it is about the viewer', async () => {
    const { app, url } = await startApp({ policy: 'bulk' });
    apps.push(app);
    const index = (await (await fetch(`${url}/api/assets/demo`)).json()) as {
      renditions: { kind: string; segments: { file: string }[] }[];
    };
    const response = await download(`${url}/media/demo/${index.renditions[0]!.segments[0]!.file}`);
    assert.match(String(response.headers['cache-control']), /^public, max-age=\d+, immutable$/);
  });

  it("keeps a viewer's ?policy= pin from a shared cache's other viewers", async () => {
    const { app, url } = await startApp({ policy: 'bulk', allowPolicyOverride: true });
    apps.push(app);
    const index = (await (await fetch(`${url}/api/assets/demo`)).json()) as {
      renditions: { kind: string; segments: { file: string }[] }[];
    };
    const response = await download(`${url}/media/demo/${index.renditions[0]!.segments[0]!.file}?policy=bulk`);
    assert.match(
      String(response.headers['cache-control']),
      /^public, max-age=\d+, immutable, private="server-timing, cmsd-dynamic"$/,
    );
  });

  it(
    'gives every paced policy a throttling phase of the media seconds it carries over ' +
      "the policy's headroom (-5 %, +15 %)",
    async () => {
      // On loopback every socket limit sits at its floor (10 packets of 64 kB per 50 µs), so writes pace:
      // the token buckets at 1.25 x R, trickle's clamp at R (Algorithm 1's floor), kernel pacing at 1.25 x R.
      const multiples: Record<string, number> = {
        'app-pacing': 1.25,
        'app-pacing-16k': 1.25,
        trickle: 1,
        pacing: 1.25,
        cmcd: 1.25,
        'trickle-abr': 1,
      };
      const { app, url } = await startApp({ startupSec: 2, allowPolicyOverride: true });
      apps.push(app);
      const from = byteAt(4);
      const to = byteAt(20) - 1;
      const downloads = await Promise.all(
        Object.keys(multiples).map((policy) =>
          download(`${url}/media/demo/${progressiveName}?policy=${policy}`, {
            headers: { range: `bytes=${from}-${to}` },
          }),
        ),
      );
      const records = await waitForFlows(url, Object.keys(multiples).length, 15_000);
      const failures: string[] = [];
      for (const [index, [policy, multiple]] of Object.entries(multiples).entries()) {
        const record = records.find((r) => r.policy === policy)!;
        // Under a limit in the socket the startup bytes still unsent when throttling began are the phase's first: its
        // schedule starts with them.
        const throttledFrom = to + 1 - record.throttling!.bytes - record.throttling!.unsentStartupBytes;
        const mediaSec = mediaSecAt(to + 1) - mediaSecAt(throttledFrom);
        const ratio = record.throttling!.durationMs / ((mediaSec / multiple) * 1000);
        // The client's own view of the same bytes (from the phase's first byte to the last): a record
        // dated wrong and a limit that let bytes go early fail alike above; this line tells them apart.
        const arrivals = downloads[index]!.arrivals;
        let phaseFirst: Arrival | undefined;
        let receivedBytes = 0;
        for (const arrival of arrivals) {
          receivedBytes += arrival.bytes;
          if (receivedBytes > throttledFrom - from) {
            phaseFirst = arrival;
            break;
          }
        }
        const clientMs = phaseFirst === undefined ? NaN : arrivals.at(-1)!.atMs - phaseFirst.atMs;
        console.log(
          `# ${policy}: throttling phase ${record.throttling!.durationMs.toFixed(0)} ms ` +
            `for ${mediaSec.toFixed(2)} s of media at ${multiple} x R: ${ratio.toFixed(3)} of ` +
            `the expected; the client received its bytes over ${clientMs.toFixed(0)} ms`,
        );
        // Faster than the aim is a defect of the limit (under 0.95). Slower is also what a starved sender
        // does: six flows and the serial phase's lab beside them on two cores once stretched a phase past
        // 1.05 in a 10-run hunt; a phase of ~13 s is judged to 1.15 (2 s of stall), which a limit at the
        // wrong multiple (1 for 1.25: 1.25) still fails.
        if (ratio < 0.95 || ratio > 1.15) failures.push(`${policy}: ${ratio.toFixed(3)}`);
      }
      assert.deepEqual(failures, [], `phases against their expected length: ${failures.join(', ')}`);
    },
  );

  it('answers a bad ?policy= before any media header is written: no validators, nothing cacheable', async () => {
    const { app, url } = await startApp({ allowPolicyOverride: true });
    apps.push(app);
    const bad = await fetch(`${url}/media/demo/${videoSegments[3]!.file}?policy=warp`);
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get('cache-control'), 'no-store');
    assert.equal(bad.headers.get('etag'), null);
    assert.equal(bad.headers.get('last-modified'), null);
    assert.equal(((await bad.json()) as { error: { code: string } }).error.code, 'ORIGIN_ERR_BAD_POLICY');
  });

  it(
    'keeps a startup phase under the ABR-aware policies without CMCD: the ' +
      "presentation's first seconds, a seek, a low buffer",
    async () => {
      for (const policy of ['cmcd', 'trickle-abr']) {
        const { app, url } = await startApp({ startupSec: 4, policy });
        apps.push(app);
        const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
        const reasons: string[] = [];
        try {
          // The first segment, then a seek to the 5th and on: the new run's first 4 s of media, then a buffer under 5
          // s, then paced.
          for (const index of [0, 4, 5, 6, 7, 8]) {
            const response = await download(`${url}/media/demo/${videoSegments[index]!.file}`, { agent });
            reasons.push(String(response.headers['server-timing']));
          }
        } finally {
          agent.destroy();
        }
        assert.match(reasons[0]!, /full speed: within the first 4 s of the presentation/, policy);
        assert.match(reasons[1]!, /full speed: the viewer's run has fetched 0.0 s/, policy);
        assert.match(reasons[2]!, /full speed: the viewer's run has fetched 2.0 s/, policy);
        assert.match(reasons[3]!, /full speed: buffer >= [34]\.\d s \(fetched - elapsed\) below 5 s/, policy);
        assert.match(
          reasons[4]!,
          /kbit\/s: buffer >= [56]\.\d s \(fetched - elapsed\): 2\.\d\d x the next rung/,
          policy,
        );
        const records = await waitForFlows(url, 6);
        assert.deepEqual(
          records.map((r) => r.throttling === null),
          [true, true, true, true, false, false],
          `${policy}: ${records.map((r) => r.reason).join('\n')}`,
        );
      }
    },
  );
});
