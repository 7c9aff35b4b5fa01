/**
 * The demo stack's entrypoints proven without a Docker engine: each service's entrypoint script
 * runs with the compose file's environment in the lab's namespaces (origin -> origin, router ->
 * router, player -> player, gateway -> cross), and the player gets its QoE report through the
 * router's shaped link. What differs from the containers is only what the lab's topology makes
 * different, named here: one subnet (no routes to add: ROUTE_VIA empty), the router's interface
 * names, bridge forwarding, the lab's addresses, the netem backend where this kernel has it (the
 * delay line otherwise), the test media, a shorter session, no user switch. Root and Chromium.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { defaultChromiumPath, labDown, labUp, netemAvailable, profileLink, type Lab } from '@trickle/e2e';
import { repoRoot, serviceEntrypoint, serviceEnvironment } from './compose-file.js';

const root = typeof process.getuid === 'function' && process.getuid() === 0;
const missing = !root ? 'the lab needs root (network namespaces)' : !existsSync(defaultChromiumPath) ? `Chromium not installed at ${defaultChromiumPath}` : undefined;
if (missing !== undefined && process.env.CI === 'true') throw new Error(`CI must prove the compose entrypoints, but ${missing}`);
const skip = missing ?? (process.env.TRICKLE_TEST_MEDIA === undefined ? 'TRICKLE_TEST_MEDIA not set: run via npm test' : false);
if (skip !== false) console.log(`# skipping the compose entrypoints: ${skip}`);

const labName = 'dock';
const originPort = 8080;

describe('the compose services\' entrypoints in the lab', { skip }, () => {
  let lab: Lab;
  let bin: string;
  let reports: string;
  const children: ChildProcess[] = [];
  let routerOutput = '';

  /** Runs a service's entrypoint on a lab host with the compose environment plus the lab's differences. */
  function runService(service: string, host: 'origin' | 'router' | 'player' | 'cross', overrides: Record<string, string>): ChildProcess {
    const env = { ...serviceEnvironment(service), ...overrides, PATH: `${bin}:${process.env.PATH}` };
    const child = lab.spawn(host, ['env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), 'sh', serviceEntrypoint(service)], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: env.PATH } });
    child.stdout!.on('data', (chunk: Buffer) => {
      if (service === 'router') routerOutput += chunk.toString();
      process.stdout.write(`# ${service}: ${chunk.toString().trim().split('\n').join(`\n# ${service}: `)}\n`);
    });
    child.stderr!.on('data', (chunk: Buffer) => process.stdout.write(`# ${service} (stderr): ${chunk.toString().trim().split('\n').join(`\n# ${service} (stderr): `)}\n`));
    children.push(child);
    return child;
  }

  before(async () => {
    bin = await mkdtemp(join(tmpdir(), 'trickle-bin-'));
    await symlink(join(repoRoot, 'bin', 'trickle.js'), join(bin, 'trickle'));
    reports = await mkdtemp(join(tmpdir(), 'trickle-reports-'));
    // Namespaces and wires only: the router entrypoint does the forwarding and shaping.
    lab = await labUp(labName, profileLink(serviceEnvironment('router').LINK_PROFILE!), { shape: false, cross: true });
  });

  after(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await labDown(labName);
    await rm(bin, { recursive: true, force: true });
    await rm(reports, { recursive: true, force: true });
  });

  it('origin, router, gateway and player come up from their entrypoints; the player reports QoE through the router', async () => {
    const origin = runService('origin', 'origin', { TRICKLE_MEDIA: process.env.TRICKLE_TEST_MEDIA!, ROUTE_VIA: '', TRICKLE_LOG_LEVEL: 'warn' });
    const netem = netemAvailable().available;
    const router = runService('router', 'router', {
      ROUTER_ORIGIN_SIDE: lab.state.ports.originSide,
      ROUTER_ACCESS_SIDE: lab.state.ports.accessSide,
      ROUTER_FORWARDING: 'bridge',
      ...(netem ? {} : { LINK_BACKEND: 'delayline' }),
    });
    for (let i = 0; i < 100 && !routerOutput.includes('router ('); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.match(routerOutput, new RegExp(`router \\(${netem ? 'netem' : 'delayline'}, bridge\\): .* down 6 Mbit/s, up 1 Mbit/s, RTT 40 ms`), 'the router applied the compose file\'s link (dsl-6mbit)');
    await lab.waitForHttp(`http://${lab.address('origin')}:${originPort}/healthz`, { attempts: 60 });
    // The host's way in: the gateway on the access side relays to the origin across the link.
    runService('gateway', 'cross', { ORIGIN_HOST: lab.address('origin'), ROUTE_VIA: '' });
    await lab.waitForHttp(`http://${lab.address('cross')}:${serviceEnvironment('gateway').LISTEN_PORT}/player/`, { attempts: 30 });
    const before = await lab.status();
    const player = runService('player', 'player', { ORIGIN_HOST: lab.address('origin'), ROUTE_VIA: '', REPORTS: reports, RUN_AS: '', SESSIONS: '1', SECONDS_PER_SESSION: '20' });
    const [code] = (await once(player, 'exit')) as [number | null];
    assert.equal(code, 0, 'the player entrypoint succeeded');
    const [run] = await readdir(reports);
    assert.match(run!, /^\d{8}T\d{6}Z-dashjs$/);
    const summary = JSON.parse(await readFile(join(reports, run!, 'summary.json'), 'utf8')) as { aggregates: { sessions: number; neverStarted: number; startupDelayMs: { mean: number }; meanBitrateBps: number }; run: { url: string } };
    assert.equal(summary.aggregates.sessions, 1);
    assert.equal(summary.aggregates.neverStarted, 0);
    assert.equal(summary.run.url, `http://${lab.address('origin')}:${originPort}/media/demo/manifest.mpd`);
    assert.ok(existsSync(join(reports, run!, 'index.html')));
    // Its bytes crossed the router's shaped downlink (the bottleneck queue carried the media).
    const after = await lab.status();
    const downBytes = after.bottleneck.down.sentBytes - before.bottleneck.down.sentBytes;
    assert.ok(downBytes > 2_000_000, `${downBytes} B through the router's downlink bottleneck`);
    assert.ok(summary.aggregates.meanBitrateBps < 6e6, 'below the 6 Mbit/s line');
    assert.equal(router.exitCode, null, 'the router keeps running until it is stopped');
    const routerExit = once(router, 'exit');
    router.kill('SIGTERM');
    const [routerCode] = (await routerExit) as [number | null];
    assert.equal(routerCode, 0, 'the router stops cleanly on SIGTERM');
    assert.equal((await lab.output('router', ['tc', 'qdisc', 'show', 'dev', lab.state.ports.accessSide])).includes('tbf'), false, 'and takes its shaping with it');
    const originExit = once(origin, 'exit');
    origin.kill('SIGTERM');
    await originExit;
  });
});
