/** A benchmark's `--results` name is a plain file name in bench/results, refused up front otherwise. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resultsFileName } from '../../bench/results-file.js';

describe('results file names', () => {
  it('takes a plain file name', () => {
    assert.equal(resultsFileName('paced-viewers.md'), 'paced-viewers.md');
  });

  it('refuses a name with a directory, or none, with a coded usage error naming the option', () => {
    for (const name of ['/tmp/x.md', 'sub/x.md', '../x.md', '..', '.', ''])
      assert.throws(
        () => resultsFileName(name),
        (error: Error & { code?: string }) =>
          error.code === 'BENCH_ERR_USAGE' && error.message.includes(`--results '${name}'`),
        name,
      );
  });
});
