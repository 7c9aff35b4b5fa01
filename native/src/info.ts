/** What this host offers a pacing origin, checked on real sockets rather than assumed. */
import { readFileSync } from 'node:fs';
import { mkdir, rmdir } from 'node:fs/promises';
import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import { release } from 'node:os';
import { join } from 'node:path';
import { binding, bindingUnavailableReason, buildStatus } from './binding.js';
import { ensureCgroup2Mount } from './cgroup.js';
import { setMaxPacingRate, tcpInfo, getCongestionControl, setCongestionControl } from './socket.js';

export interface Capability {
  readonly available: boolean;
  readonly reason?: string;
}

export interface NativeInfo {
  readonly supported: boolean;
  readonly platform: string;
  readonly kernel: string;
  readonly addon: Capability;
  readonly tcpInfo: Capability & { readonly kernelLengthBytes?: number };
  readonly pacingRate: Capability;
  readonly congestionControl: {
    readonly default: string | undefined;
    readonly available: readonly string[];
    /** What this process may select per socket (root: any available one). */
    readonly settable: readonly string[];
  };
  readonly bpfClamp: Capability;
}

function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

async function withLoopbackConnection<T>(use: (socket: Socket) => T): Promise<T> {
  const server = createServer((peer) => peer.on('error', () => undefined));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const client = connect(port, '127.0.0.1');
  await once(client, 'connect');
  try {
    return use(client);
  } finally {
    client.destroy();
    server.close();
  }
}

function errorText(error: unknown): string {
  const e = error as Error & { code?: string };
  return e.code !== undefined ? `${e.code}: ${e.message}` : e.message;
}

async function probeBpf(): Promise<Capability> {
  if (binding === undefined) return { available: false, reason: bindingUnavailableReason ?? 'no addon' };
  const compiled = binding.bpfCompiled();
  if (!compiled.compiled)
    return { available: false, reason: buildStatus()?.reasons.bpf ?? compiled.reason ?? 'not compiled' };
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return {
      available: false,
      reason:
        'loading the sock_ops program needs root; an unprivileged origin can use maps pinned by "trickle native setup"',
    };
  }
  // Prove it: load and attach to a throwaway cgroup, then detach.
  let probe: string | undefined;
  try {
    probe = join(await ensureCgroup2Mount(), `trickle-probe-${process.pid}`);
    await mkdir(probe, { recursive: true });
    binding.bpfLoadAndAttach(probe, '');
    return { available: true };
  } catch (error) {
    return { available: false, reason: errorText(error) };
  } finally {
    binding.bpfClose();
    if (probe !== undefined) await rmdir(probe).catch(() => undefined);
  }
}

export async function nativeInfo(): Promise<NativeInfo> {
  const available = (readProc('/proc/sys/net/ipv4/tcp_available_congestion_control') ?? '')
    .split(/\s+/)
    .filter(Boolean);
  const allowed = (readProc('/proc/sys/net/ipv4/tcp_allowed_congestion_control') ?? '').split(/\s+/).filter(Boolean);
  const base = { platform: process.platform, kernel: release() };
  if (binding === undefined) {
    const reason = bindingUnavailableReason ?? 'no addon';
    return {
      ...base,
      supported: false,
      addon: { available: false, reason },
      tcpInfo: { available: false, reason },
      pacingRate: { available: false, reason },
      congestionControl: { default: readProc('/proc/sys/net/ipv4/tcp_congestion_control'), available, settable: [] },
      bpfClamp: { available: false, reason },
    };
  }
  const sockets = await withLoopbackConnection((socket) => {
    let info: NativeInfo['tcpInfo'];
    try {
      const read = tcpInfo(socket);
      info =
        read.rttUs !== undefined && (read.mss ?? 0) > 0
          ? { available: true, kernelLengthBytes: read.kernelLengthBytes }
          : { available: false, reason: 'TCP_INFO lacks rtt or mss' };
    } catch (error) {
      info = { available: false, reason: errorText(error) };
    }
    let pacing: Capability;
    try {
      setMaxPacingRate(socket, 250_000);
      pacing = { available: true };
    } catch (error) {
      pacing = { available: false, reason: errorText(error) };
    }
    const original = getCongestionControl(socket);
    const settable = available.filter((name) => {
      try {
        setCongestionControl(socket, name);
        return true;
      } catch {
        return false;
      }
    });
    setCongestionControl(socket, original);
    return { info, pacing, settable: settable.length > 0 ? settable : allowed };
  });
  return {
    ...base,
    supported: true,
    addon: { available: true },
    tcpInfo: sockets.info,
    pacingRate: sockets.pacing,
    congestionControl: {
      default: readProc('/proc/sys/net/ipv4/tcp_congestion_control'),
      available,
      settable: sockets.settable,
    },
    bpfClamp: await probeBpf(),
  };
}
