/** Tests that need root and a kernel feature: fail loudly in CI (root here), skip elsewhere. */
import { existsSync } from 'node:fs';

export function rootSkipReason(what: string): string | false {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const reason = !root
    ? `${what} needs root`
    : process.platform !== 'linux'
      ? `${what} needs Linux`
      : !existsSync('/sys/kernel/btf/vmlinux')
        ? `${what} needs kernel BTF`
        : false;
  if (reason !== false && process.env.CI === 'true') throw new Error(`CI must run ${what}, but: ${reason}`);
  if (reason !== false) console.log(`# skipping: ${reason}`);
  return reason;
}
