/** A benchmark's numeric options: checked before it touches the machine, a coded line naming the option otherwise. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { numberOption } from '../../bench/options.js';

const usage = (text: string) => (error: Error & { code?: string }) =>
  error.code === 'BENCH_ERR_USAGE' && error.message.includes(text);

describe('benchmark options', () => {
  it('takes whole numbers from their least', () => {
    assert.equal(numberOption('--runs', '3', 'positive-integer'), 3);
    assert.equal(numberOption('--idle-connections', '0', 'non-negative-integer'), 0);
    for (const text of ['0', '-1', '1.5', 'x', '', ' ', 'NaN', 'Infinity'])
      assert.throws(
        () => numberOption('--runs', text, 'positive-integer'),
        usage(`--runs takes a whole number from 1, not '${text}'`),
        text,
      );
  });

  it('takes numbers above 0, or from 0 where zero means something', () => {
    assert.equal(numberOption('--seconds', '2.5', 'positive'), 2.5);
    assert.equal(numberOption('--warmup', '0', 'non-negative'), 0);
    for (const text of ['0', '-2', 'x', '', 'Infinity'])
      assert.throws(() => numberOption('--seconds', text, 'positive'), usage(`--seconds takes a number above 0`), text);
    assert.throws(() => numberOption('--warmup', '-1', 'non-negative'), usage('a number from 0'));
  });

  it('refuses a malformed option in one coded line before the benchmark needs root, nginx or bpftool', () => {
    const script = join(import.meta.dirname, '..', '..', 'bench', 'paced-flows.js');
    const result = spawnSync(process.execPath, [script, '--runs', 'x'], { encoding: 'utf8' });
    assert.equal(result.status, 1);
    assert.equal(result.stderr.trim(), "trickle: --runs takes a whole number from 1, not 'x' [BENCH_ERR_USAGE]");
  });
});
