/** Running the system's network tools (ip, tc, ethtool) with errors that say what failed. */
import { spawnSync } from 'node:child_process';
import { E2eError } from '../errors.js';

export function run(
  args: readonly string[],
  options: { allowFailure?: boolean } = {},
): { ok: boolean; stdout: string; stderr: string } {
  const result = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8' });
  const ok = result.status === 0;
  if (!ok && options.allowFailure !== true) {
    const detail = (result.stderr || result.error?.message || `exit ${result.status}`).trim();
    throw new E2eError('E2E_ERR_LAB', `${args.join(' ')} failed: ${detail}`);
  }
  return { ok, stdout: result.stdout ?? '', stderr: result.stderr ?? '' };
}

/** Runs a command in a named network namespace, or in this process's own when `ns` is null. */
export function inNs(ns: string | null, args: readonly string[], options: { allowFailure?: boolean } = {}) {
  return run(ns === null ? args : ['ip', 'netns', 'exec', ns, ...args], options);
}

/**
 * Runs many `ip` or `tc` commands in one process (`-batch -`), in a namespace or this one: a
 * population's hundreds of addresses and classes take a few milliseconds instead of seconds.
 */
export function runBatch(ns: string | null, tool: 'ip' | 'tc', lines: readonly string[]): void {
  if (lines.length === 0) return;
  const args = [...(ns === null ? [] : ['ip', 'netns', 'exec', ns]), tool, '-batch', '-'];
  const result = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8', input: `${lines.join('\n')}\n` });
  if (result.status !== 0) {
    const detail = (result.stderr || result.error?.message || `exit ${result.status}`)
      .trim()
      .split('\n')
      .slice(0, 3)
      .join('; ');
    throw new E2eError(
      'E2E_ERR_LAB',
      `${tool} -batch (${lines.length} commands${ns === null ? '' : ` in ${ns}`}) failed: ${detail}`,
    );
  }
}
