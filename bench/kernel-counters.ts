/**
 * The kernel's TCP counters of a network namespace (/proc/<pid>/net/netstat, the one `nstat` reads):
 * a benchmark reads them around a server's run, where only that server listens, to say what the
 * kernel did to its connections (handshakes its accept queue had no room for).
 */
import { readFileSync } from 'node:fs';

/**
 * One counter of /proc/net/netstat's text: its lines come in pairs, `<Group>: <names...>` then
 * `<Group>: <values...>`. Undefined when the kernel does not have it.
 */
export function netstatCounter(text: string, group: string, name: string): number | undefined {
  const lines = text.split('\n').filter((line) => line.startsWith(`${group}: `));
  for (let i = 0; i + 1 < lines.length; i += 2) {
    const names = lines[i]!.split(/\s+/).slice(1);
    const values = lines[i + 1]!.split(/\s+/).slice(1);
    const index = names.indexOf(name);
    if (index >= 0 && values[index] !== undefined) return Number(values[index]);
  }
  return undefined;
}

/** Handshakes the listeners of `pid`'s network namespace dropped for a full accept queue, so far. */
export function listenOverflows(pid: number): number | undefined {
  try {
    return netstatCounter(readFileSync(`/proc/${pid}/net/netstat`, 'utf8'), 'TcpExt', 'ListenOverflows');
  } catch {
    return undefined;
  }
}
