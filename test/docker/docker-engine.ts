/**
 * A Docker engine for the demo stack's test: the one that answers already, or one this test
 * installs (Debian's docker.io, docker-compose, debootstrap; CI or TRICKLE_TEST_DOCKER_INSTALL=1)
 * and starts itself. A daemon started here changes the host (iptables FORWARD policy DROP, its
 * chains and NAT rules, net.ipv4.ip_forward=1, docker0): stop() stops it by pid and puts the
 * iptables rules and the sysctl back as they were.
 */
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface Engine {
  /** Whether this test started the daemon (and so stops it). */
  readonly started: boolean;
  readonly logPath: string | null;
  stop(): Promise<void>;
}

export interface QuietOptions {
  readonly input?: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Unset: no limit (a `docker pull` or `up` takes what it takes). */
  readonly timeoutMs?: number;
}

/** Runs a command to its end without printing: whether it succeeded and what it wrote. */
export function quiet(
  command: string,
  args: readonly string[],
  options: QuietOptions = {},
): { ok: boolean; stdout: string; stderr: string } {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    input: options.input,
    env: options.env,
    cwd: options.cwd,
    timeout: options.timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { ok: result.status === 0, stdout: result.stdout ?? '', stderr: result.stderr ?? result.error?.message ?? '' };
}

/** The host's own tools answer within this, or something is stuck. */
const hostCommandTimeoutMs = 120_000;
const host = (command: string, args: readonly string[], input?: string) =>
  quiet(command, args, { input, timeoutMs: hostCommandTimeoutMs });

export function hasCommand(name: string): boolean {
  return host('sh', ['-c', `command -v ${name}`]).ok;
}

const tools = ['dockerd', 'docker', 'docker-compose', 'debootstrap'] as const;

export function missingTools(): string[] {
  return tools.filter((tool) => !hasCommand(tool));
}

/** Installs the engine, Compose v1 and debootstrap from Debian (root). */
export function installEngine(): void {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq', '-o', 'DPkg::Lock::Timeout=600'],
    ['install', '-y', '-qq', '-o', 'DPkg::Lock::Timeout=600', 'docker.io', 'docker-compose', 'debootstrap'],
  ]) {
    const result = spawnSync('apt-get', args, { encoding: 'utf8', env });
    if (result.status !== 0)
      throw new Error(
        `apt-get ${args.join(' ')} ` +
          `failed: ${(result.stderr || result.error?.message || '').trim().split('\n').slice(-3).join(' / ')}`,
      );
  }
}

export function engineAnswers(): boolean {
  return host('docker', ['info', '--format', '{{.ServerVersion}}']).ok;
}

export async function startEngine(stateDir: string): Promise<Engine> {
  if (engineAnswers()) return { started: false, logPath: null, async stop() {} };
  const savedRules = hasCommand('iptables-save') ? host('iptables-save', []).stdout : null;
  const savedForwarding = host('sysctl', ['-n', 'net.ipv4.ip_forward']).stdout.trim();
  const logPath = join(stateDir, 'dockerd.log');
  const log = openSync(logPath, 'a');
  const daemon = spawn('dockerd', ['--pidfile', join(stateDir, 'dockerd.pid')], {
    detached: true,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const exited = new Promise<void>((resolve) => daemon.once('exit', () => resolve()));
  for (let attempt = 0; attempt < 120 && !engineAnswers(); attempt++) {
    if (daemon.exitCode !== null) throw new Error(`dockerd exited with ${daemon.exitCode}; see ${logPath}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  if (!engineAnswers()) throw new Error(`dockerd did not answer within 30 s; see ${logPath}`);
  return {
    started: true,
    logPath,
    async stop() {
      daemon.kill('SIGTERM');
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 30_000).unref());
      if ((await Promise.race([exited, timeout])) === 'timeout') {
        daemon.kill('SIGKILL');
        await exited;
      }
      if (savedRules !== null) host('iptables-restore', [], savedRules);
      // iptables-restore replaces only the tables it is given: one that was empty (or iptables
      // that was not there) before the daemon is emptied again.
      for (const table of ['filter', 'nat']) {
        if (savedRules?.includes(`*${table}`) === true || !hasCommand('iptables')) continue;
        host('iptables', ['-t', table, '-F']);
        host('iptables', ['-t', table, '-X']);
        for (const chain of table === 'filter'
          ? ['INPUT', 'FORWARD', 'OUTPUT']
          : ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING'])
          host('iptables', ['-t', table, '-P', chain, 'ACCEPT']);
      }
      if (savedForwarding !== '') host('sysctl', ['-q', '-w', `net.ipv4.ip_forward=${savedForwarding}`]);
      if (existsSync('/sys/class/net/docker0')) host('ip', ['link', 'del', 'docker0']);
    },
  };
}

/**
 * A directory holding a `docker` whose `build` runs BuildKit (DOCKER_BUILDKIT=1), for Compose v1 to call (it runs the
 * first `docker` on PATH): the PATH's own when it can (a client with buildx, or one with BuildKit built in), else
 * another client on this machine that can (here the Docker CLI on PATH is a newer one without buildx, and Debian's
 * docker.io ships its own with BuildKit built in). Null: none can, and images build with the legacy builder. BuildKit
 * builds the stages a target needs, those that do not depend on each other side by side, and a stage several targets
 * share once, as Compose v2 does by default.
 */
export function buildKitDockerDir(): string | null {
  const onPath = host('sh', ['-c', 'command -v docker']).stdout.trim();
  const candidates = [...new Set([onPath, '/usr/bin/docker'].filter((path) => path !== '' && existsSync(path)))];
  const env = { ...process.env, DOCKER_BUILDKIT: '1' };
  const usable = candidates.find((cli) => {
    const help = quiet(cli, ['build', '--help'], { env, timeoutMs: hostCommandTimeoutMs });
    return help.ok && help.stdout.includes('--progress');
  });
  return usable === undefined ? null : dirname(usable);
}
