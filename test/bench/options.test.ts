/** A benchmark's numeric options: checked before it touches the machine, a coded line naming the option otherwise. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { positiveNumberOption, wholeNumberOption } from '../../bench/options.js';

const usage = (text: string) => (error: Error & { code?: string }) =>
  error.code === 'BENCH_ERR_USAGE' && error.message.includes(text);

describe('benchmark options', () => {
  it('takes whole numbers from their least', () => {
    assert.equal(wholeNumberOption('--runs', '3', 1), 3);
    assert.equal(wholeNumberOption('--idle-connections', '0', 0), 0);
    for (const text of ['0', '-1', '1.5', 'x', '', ' ', 'NaN', 'Infinity'])
      assert.throws(
        () => wholeNumberOption('--runs', text, 1),
        usage(`--runs takes a whole number from 1, not '${text}'`),
        text,
      );
  });

  it('takes numbers above 0, or from 0 where zero means something', () => {
    assert.equal(positiveNumberOption('--seconds', '2.5'), 2.5);
    assert.equal(positiveNumberOption('--warmup', '0', { allowZero: true }), 0);
    for (const text of ['0', '-2', 'x', '', 'Infinity'])
      assert.throws(() => positiveNumberOption('--seconds', text), usage(`--seconds takes a number above 0`), text);
    assert.throws(() => positiveNumberOption('--warmup', '-1', { allowZero: true }), usage('a number from 0'));
  });

  it('refuses a malformed option in one coded line before the benchmark needs root, nginx or bpftool', () => {
    const script = join(import.meta.dirname, '..', '..', 'bench', 'paced-flows.js');
    const result = spawnSync(process.execPath, [script, '--runs', 'x'], { encoding: 'utf8' });
    assert.equal(result.status, 1);
    assert.equal(result.stderr.trim(), "trickle: --runs takes a whole number from 1, not 'x' [BENCH_ERR_USAGE]");
  });
});
