/**
 * The demo stack for real: a Docker engine (installed and started here if none answers, in CI or
 * with TRICKLE_TEST_DOCKER_INSTALL=1), the images built from docker/Dockerfile (on the official
 * Node image where a registry answers, else on the base scripts/docker-base makes), then
 * `docker-compose up` with the profile "metrics". The player's QoE report must appear in the
 * mounted reports directory with its bytes through the router's shaped downlink; the origin must
 * run unprivileged with the BPF clamp in force and clamp flows; Prometheus must scrape it and the
 * Grafana dashboard's queries return series. Then `down -v`, and a daemon started here is stopped
 * and the host's iptables and ip_forward put back. Root; skipped with a printed reason elsewhere.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cwndClampOf, type FlowRecord } from '@trickle/origin';
import { parse as parseYaml } from 'yaml';
import {
  buildKitDockerDir,
  engineAnswers,
  installEngine,
  missingTools,
  quiet,
  startEngine,
  type Engine,
} from './docker-engine.js';
import { addressOf, readCompose, repoRoot } from './compose-file.js';

const root = typeof process.getuid === 'function' && process.getuid() === 0;
const mayInstall = process.env.CI === 'true' || process.env.TRICKLE_TEST_DOCKER_INSTALL === '1';
const missing = missingTools();
const reason = !root
  ? 'needs root (the engine, debootstrap)'
  : missing.length > 0 && !mayInstall && !engineAnswers()
    ? `${missing.join(', ')} missing (apt-get install -y docker.io docker-compose ` +
      `debootstrap, or TRICKLE_TEST_DOCKER_INSTALL=1 lets this test install them)`
    : undefined;
if (reason !== undefined && process.env.CI === 'true') throw new Error(`CI must run the demo stack, but it ${reason}`);
if (reason !== undefined) console.log(`# skipping the demo stack: ${reason}`);

const project = 'trickle-test';
const localBase = 'trickle/node:20-bookworm';
const officialBase = 'node:20-bookworm-slim';
const grafanaImage = readCompose().services.grafana!.image!;
const origin = `http://${addressOf('origin', 'edge')}:8080`;
const prometheus = `http://${addressOf('prometheus', 'edge')}:9090`;

const loadedMs = Date.now();

/** A progress line, with the seconds since the file started (where the stack's time goes). */
function say(line: string): void {
  process.stdout.write(`# stack: [${((Date.now() - loadedMs) / 1000).toFixed(0)} s] ${line}\n`);
}

/** Runs a long command, printing the lines that show progress (build steps) as they come. */
function streamed(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  progress: RegExp,
): Promise<{ ok: boolean; tail: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env, cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    // BuildKit repeats a step's header before each chunk of its output: a step is said once.
    const said = new Set<string>();
    const take = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (line.trim() === '') continue;
        lines.push(line);
        if (lines.length > 60) lines.shift();
        const shown = line.trim().slice(0, 160);
        if (progress.test(line) && !said.has(shown)) {
          said.add(shown);
          say(shown);
        }
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => resolve({ ok: code === 0, tail: lines.join('\n') }));
  });
}

async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/**
 * GET on a new TCP connection (a new A/B draw), kept open as a player's is (a response's record reads the socket once
 * its last bytes are acknowledged); resolves with the response's Server-Timing. The caller destroys `agent`.
 */
function freshConnectionGet(url: string, agent: Agent): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = get(url, { agent, timeout: 30_000 }, (response) => {
      response.resume();
      response.on('end', () => {
        if (response.statusCode === 200) resolve(String(response.headers['server-timing'] ?? ''));
        else reject(new Error(`${url}: HTTP ${response.statusCode}`));
      });
      response.on('error', reject);
    });
    request.on('timeout', () => request.destroy(new Error(`${url}: no answer in 30 s`)));
    request.on('error', reject);
  });
}

async function json<T>(url: string): Promise<T> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return (await response.json()) as T;
}

function statusOf(pid: number): Record<string, string> {
  return Object.fromEntries(
    readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .map((line) => line.split(/:\s+/, 2) as [string, string])
      .filter(([, value]) => value !== undefined),
  );
}

describe('the demo stack under a real Docker engine', { skip: reason ?? false, timeout: 40 * 60_000 }, () => {
  let stateDir: string;
  let reports: string;
  let engine: Engine | undefined;
  let env: NodeJS.ProcessEnv;
  let grafanaPresent = false;
  const compose = (args: readonly string[]) =>
    quiet('docker-compose', ['-p', project, ...args], { env, cwd: repoRoot });
  const containerPid = (service: string) =>
    Number(quiet('docker', ['inspect', '-f', '{{.State.Pid}}', `${project}_${service}_1`]).stdout.trim());

  before(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'trickle-docker-'));
    reports = await mkdtemp(join(tmpdir(), 'trickle-stack-reports-'));
    // As ./reports would be (mkdtemp makes it 0700): the player's user writes below it.
    await chmod(reports, 0o755);
    if (missingTools().length > 0) {
      say(`installing ${missingTools().join(', ')} (Debian packages)`);
      installEngine();
    }
    let started = Date.now();
    engine = await startEngine(stateDir);
    say(
      engine.started
        ? `started dockerd in ${Date.now() - started} ms (log ${engine.logPath})`
        : 'using the Docker engine that answers',
    );

    // The base: the official Node image where a registry answers, else the local one.
    let base = officialBase;
    if (!quiet('docker', ['image', 'inspect', officialBase]).ok && !quiet('docker', ['pull', '-q', officialBase]).ok) {
      base = localBase;
      if (!quiet('docker', ['image', 'inspect', localBase]).ok) {
        say(
          `no registry answers for ${officialBase}: ${localBase} from scripts/docker-base (setup kept its root filesystem)`,
        );
        started = Date.now();
        const made = await streamed(join(repoRoot, 'scripts', 'docker-base'), [], process.env, /^docker-base:/);
        assert.ok(made.ok, `scripts/docker-base failed:\n${made.tail}`);
        say(`base image ready in ${((Date.now() - started) / 1000).toFixed(0)} s`);
      }
    }
    env = {
      ...process.env,
      NODE_IMAGE: base,
      TRICKLE_REPORTS: reports,
      SESSIONS: '1',
      SECONDS_PER_SESSION: '20',
      // A shorter demo than the stack's 60 s: encoding it is most of the build stage's CPU.
      DEMO_SECONDS: '24',
      TRICKLE_GATEWAY_PORT: '18080',
      TRICKLE_GRAFANA_PORT: '13000',
    };
    started = Date.now();
    // With BuildKit (as Compose v2 builds), every image at once: the build stage they share is built once, beside the
    // player's Chromium and Prometheus' packages. With the legacy builder, the origin first (it builds the stage the
    // others share; built side by side, each would build it again), then the others side by side.
    const buildKitDir = buildKitDockerDir();
    const buildEnv =
      buildKitDir === null
        ? env
        : {
            ...env,
            DOCKER_BUILDKIT: '1',
            COMPOSE_DOCKER_CLI_BUILD: '1',
            PATH: `${buildKitDir}:${process.env.PATH ?? ''}`,
          };
    say(
      buildKitDir === null
        ? 'building with the legacy builder (no BuildKit here)'
        : `building with BuildKit (${buildKitDir}/docker)`,
    );
    const progress =
      /^(Step \d+\/\d+ : (FROM|RUN)|Successfully tagged|Building \w+$|#\d+ \[[\w-]+ +\d+\/\d+\] (FROM|RUN)|#\d+ naming to)/;
    const build = (services: readonly string[]) =>
      streamed(
        'docker-compose',
        ['-p', project, '--profile', 'metrics', 'build', '--parallel', ...services],
        buildEnv,
        progress,
      );
    const images = ['origin', 'router', 'player', 'prometheus'];
    const batches = buildKitDir === null ? [images.slice(0, 1), images.slice(1)] : [images];
    for (const batch of batches) {
      const built = await build(batch);
      assert.ok(built.ok, `docker-compose build ${batch.join(' ')} failed:\n${built.tail}`);
    }
    say(`images built on ${base} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    for (const line of quiet('docker', ['images', '--format', '{{.Repository}}:{{.Tag}} {{.Size}}', 'trickle-demo/*'])
      .stdout.trim()
      .split('\n'))
      say(`image ${line}`);

    compose(['--profile', 'metrics', 'down', '-v', '--remove-orphans']);
    started = Date.now();
    // Asked of the engine this test runs (at load time it may not be started yet).
    grafanaPresent = quiet('docker', ['image', 'inspect', grafanaImage]).ok;
    const services = ['origin', 'router', 'player', 'gateway', 'prometheus', ...(grafanaPresent ? ['grafana'] : [])];
    const up = compose(['--profile', 'metrics', 'up', '-d', ...services]);
    assert.ok(up.ok, `docker-compose up failed:\n${up.stderr}`);
    await waitFor('the origin to answer /readyz', 60_000, async () =>
      (await fetch(`${origin}/readyz`, { signal: AbortSignal.timeout(2000) })).ok ? true : undefined,
    );
    say(`stack up, origin ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  after(async () => {
    if (env !== undefined) {
      // Kept for a failure's story: the containers and their logs go with `down`.
      const logPath = join(tmpdir(), 'trickle-stack-logs.txt');
      await writeFile(logPath, compose(['--profile', 'metrics', 'logs', '--no-color']).stdout);
      say(`the services' logs are in ${logPath}`);
      compose(['--profile', 'metrics', 'down', '-v', '--remove-orphans']);
    }
    await engine?.stop();
    if (engine?.started === true) say('dockerd stopped; iptables and net.ipv4.ip_forward restored');
    await rm(stateDir, { recursive: true, force: true });
    await rm(reports, { recursive: true, force: true });
  });

  it('builds one image per role: Chromium and Playwright only in the player', () => {
    const check = (image: string) =>
      quiet('docker', [
        'run',
        '--rm',
        '--entrypoint',
        'sh',
        image,
        '-c',
        'test -d node_modules/playwright-core && echo playwright; command -v chromium ' +
          '>/dev/null && echo chromium; true',
      ])
        .stdout.split('\n')
        .filter(Boolean);
    assert.deepEqual(check('trickle-demo/origin'), []);
    assert.deepEqual(check('trickle-demo/router'), []);
    assert.deepEqual(check('trickle-demo/player'), ['playwright', 'chromium']);
  });

  it("the player reports QoE from across the router's shaped link", async () => {
    const outcome = await waitFor("the player's summary.json in the mounted reports directory", 240_000, async () => {
      const [run] = await readdir(reports);
      const path = run === undefined ? undefined : join(reports, run, 'summary.json');
      if (path !== undefined && existsSync(path)) return { path };
      const [status, code] = quiet('docker', [
        'inspect',
        '-f',
        '{{.State.Status}} {{.State.ExitCode}}',
        `${project}_player_1`,
      ])
        .stdout.trim()
        .split(' ');
      return status === 'exited' && code !== '0'
        ? { failed: compose(['logs', '--no-color', '--tail', '20', 'player']).stdout }
        : undefined;
    });
    assert.ok(outcome.path !== undefined, `the player exited without a report:\n${outcome.failed}`);
    const summaryPath = outcome.path;
    const summary = JSON.parse(await readFile(summaryPath, 'utf8')) as {
      aggregates: { sessions: number; neverStarted: number; meanBitrateBps: number };
      run: { url: string };
    };
    say(`report ${summaryPath}: mean bitrate ${(summary.aggregates.meanBitrateBps / 1e6).toFixed(2)} Mbit/s`);
    assert.equal(summary.aggregates.sessions, 1);
    assert.equal(summary.aggregates.neverStarted, 0);
    assert.equal(summary.run.url, `${origin}/media/demo/manifest.mpd`);
    assert.ok(summary.aggregates.meanBitrateBps < 6e6, 'below the 6 Mbit/s line');
    // The router's downlink bottleneck (TBF at 6 Mbit/s) carried the media.
    const qdiscs = compose(['exec', '-T', 'router', 'tc', '-s', 'qdisc', 'show']).stdout;
    const downlink = /qdisc tbf \S+ dev (\S+) root .*rate 6Mbit[^\n]*\n\s*Sent (\d+) bytes/.exec(qdiscs);
    assert.ok(downlink !== null, `a 6 Mbit/s TBF in the router:\n${qdiscs}`);
    assert.ok(Number(downlink[2]) > 2_000_000, `${downlink[2]} B through the downlink bottleneck on ${downlink[1]}`);
    assert.match(
      compose(['logs', '--no-color', 'router']).stdout,
      /router \((delayline|netem), routed\): \S+ -> \S+ down 6 Mbit\/s, up 1 Mbit\/s, RTT 40 ms/,
    );
  });

  it('the origin serves unprivileged with the BPF clamp in force, and clamps flows', async () => {
    assert.match(compose(['logs', '--no-color', 'origin']).stdout, /trickle clamp backend: bpf/);
    const ready = await json<{ status: string; clamp: string }>(`${origin}/readyz`);
    assert.deepEqual([ready.status, ready.clamp], ['ready', 'bpf']);
    // The player's connections drew their A/B groups among the healthchecks' and scrapes', so whether
    // its video went to trickle is a coin flip (ci21: app-pacing, 2 audio flows clamped). Fresh
    // connections of our own across the shaped link (through the gateway) until three are in the
    // trickle group make the check certain: fewer than 3 of 40 has odds 7.5e-10.
    const ownSince = Date.now();
    let trickleResponses = 0;
    let attempts = 0;
    const agents: Agent[] = [];
    for (; trickleResponses < 3 && attempts < 40; attempts += 1) {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      agents.push(agent);
      // A segment past the stack's 10 s startup window: paced from its first byte.
      const url = `http://127.0.0.1:${env.TRICKLE_GATEWAY_PORT}/media/demo/chunk-2-00008.m4s`;
      if (/policy;desc="trickle[ "]/.test(await freshConnectionGet(url, agent))) trickleResponses += 1;
    }
    assert.equal(trickleResponses, 3, `3 of ${attempts} fresh connections in the trickle group`);
    // A record is written once the response's last bytes are acknowledged, just after the client has them.
    const flows = await waitFor('the trickle flows of ours in /api/flows', 10_000, async () => {
      const recorded = (await json<{ flows: FlowRecord[] }>(`${origin}/api/flows`)).flows;
      return recorded.filter((flow) => flow.startedAtEpochMs >= ownSince && flow.policy === 'trickle').length >= 3
        ? recorded
        : undefined;
    });
    for (const agent of agents) agent.destroy();
    const clampedInKernel = (flow: FlowRecord) => {
      const clamp = cwndClampOf(flow);
      return (
        flow.policy === 'trickle' &&
        flow.backend === 'bpf' &&
        clamp?.trickleIn === 'kernel' &&
        clamp.appliedClampPackets !== null
      );
    };
    const player = flows.filter((flow) => flow.startedAtEpochMs < ownSince);
    const own = flows.filter((flow) => flow.startedAtEpochMs >= ownSince && flow.policy === 'trickle');
    say(
      `player: ${player.length} flows, ${player.filter(clampedInKernel).length} clamped in the kernel; ` +
        `ours: ${own.filter(clampedInKernel).length} of ${own.length} trickle flows clamped (${attempts} connections)`,
    );
    assert.equal(own.length, 3, 'a flow record for each trickle response of ours');
    assert.deepEqual(
      own
        .filter((flow) => !clampedInKernel(flow))
        .map((flow) => [flow.backend, flow.fallbackReason, cwndClampOf(flow)]),
      [],
      'every trickle flow across the shaped link clamped by the BPF program',
    );
    // `trickle serve` is the entrypoint's child under docker-init: no uid 0, no capabilities left.
    const init = containerPid('origin');
    const [serve] = readFileSync(`/proc/${init}/task/${init}/children`, 'utf8').trim().split(/\s+/).map(Number);
    const status = statusOf(serve!);
    assert.match(readFileSync(`/proc/${serve}/cmdline`, 'utf8'), /trickle\0serve/);
    assert.equal(status.Uid!.split(/\s+/)[0], '10002');
    assert.deepEqual(
      [status.CapEff, status.CapPrm, status.CapBnd, status.NoNewPrivs],
      ['0000000000000000', '0000000000000000', '0000000000000000', '1'],
    );
    const inspect = JSON.parse(quiet('docker', ['inspect', `${project}_origin_1`]).stdout) as [
      { HostConfig: { Privileged: boolean } },
    ];
    assert.equal(inspect[0].HostConfig.Privileged, false);
  });

  it('Prometheus scrapes the origin and every Grafana dashboard query returns series', async () => {
    await waitFor('Prometheus to report the origin target up', 60_000, async () => {
      const targets = await json<{ data: { activeTargets: { health: string; scrapeUrl: string }[] } }>(
        `${prometheus}/api/v1/targets`,
      );
      return targets.data.activeTargets.some(
        (target) => target.health === 'up' && target.scrapeUrl === `${origin}/metrics`,
      )
        ? true
        : undefined;
    });
    const dashboard = JSON.parse(
      readFileSync(join(repoRoot, 'docker', 'grafana', 'dashboards', 'trickle.json'), 'utf8'),
    ) as { panels: { title: string; targets: { expr: string }[] }[] };
    for (const panel of dashboard.panels) {
      for (const { expr } of panel.targets) {
        const series = await waitFor(`series for "${panel.title}"`, 60_000, async () => {
          const answer = await json<{ data: { result: unknown[] } }>(
            `${prometheus}/api/v1/query?query=${encodeURIComponent(expr)}`,
          );
          return answer.data.result.length > 0 ? answer.data.result.length : undefined;
        });
        say(`${panel.title}: ${series} series`);
      }
    }
  });

  // No registry answers on this machine kind and Grafana has no Debian package: its image can be
  // here only where a registry could be reached. What Grafana would load is checked in any case:
  // the datasource is the stack's Prometheus (whose answers to every panel's query were checked
  // above), the dashboard provider loads the folder the dashboard is mounted in, and every panel
  // queries that datasource. With the image here, Grafana itself must serve the dashboard too.
  it(
    "Grafana's provisioning loads the dashboard from the stack's Prometheus (and " +
      'Grafana serves it where its image is here)',
    async () => {
      const compose = readCompose().services.grafana!;
      const datasources = parseYaml(
        readFileSync(join(repoRoot, 'docker', 'grafana', 'provisioning', 'datasources', 'prometheus.yml'), 'utf8'),
      ) as { datasources: { uid: string; type: string; url: string }[] };
      const [datasource] = datasources.datasources;
      assert.equal(datasource?.type, 'prometheus');
      assert.equal(datasource?.url, prometheus, "the datasource is the stack's Prometheus");
      const providers = parseYaml(
        readFileSync(join(repoRoot, 'docker', 'grafana', 'provisioning', 'dashboards', 'trickle.yml'), 'utf8'),
      ) as { providers: { options: { path: string } }[] };
      const mounted = (compose.volumes ?? []).map(String);
      assert.ok(
        mounted.some(
          (volume) =>
            volume.startsWith('./docker/grafana/dashboards:') &&
            volume.split(':')[1] === providers.providers[0]!.options.path,
        ),
        `the provider's folder is where the dashboards are mounted: ${mounted.join(', ')}`,
      );
      const dashboard = JSON.parse(
        readFileSync(join(repoRoot, 'docker', 'grafana', 'dashboards', 'trickle.json'), 'utf8'),
      ) as {
        panels: {
          title: string;
          datasource?: { uid?: string };
          targets: { expr: string; datasource?: { uid?: string } }[];
        }[];
      };
      for (const panel of dashboard.panels) {
        for (const target of panel.targets)
          assert.equal(
            target.datasource?.uid ?? panel.datasource?.uid,
            datasource!.uid,
            `panel "${panel.title}" queries the provisioned datasource`,
          );
      }
      if (!grafanaPresent) {
        say(
          `${grafanaImage} is not here and no registry answers to pull it: Grafana itself was ` +
            `not started (its provisioning was checked, its queries run against Prometheus)`,
        );
        return;
      }
      const search = await waitFor('Grafana to list the dashboard', 90_000, async () => {
        const found = await json<{ title: string }[]>('http://127.0.0.1:13000/api/search?query=Trickle');
        return found.length > 0 ? found : undefined;
      });
      assert.ok(search.some((entry) => /trickle/i.test(entry.title)));
    },
  );

  it('the router stops cleanly on SIGTERM', () => {
    const router = `${project}_router_1`;
    assert.ok(quiet('docker', ['stop', '-t', '20', router]).ok);
    assert.equal(quiet('docker', ['inspect', '-f', '{{.State.ExitCode}}', router]).stdout.trim(), '0');
  });
});
