/**
 * What the benchmarks read around their servers: the whole machine's busy CPU (beside each server's
 * own), and a benchmark script's coded error as one line, the way the CLI prints it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { machineBusySeconds } from '../../bench/nginx-server.js';

describe('machineBusySeconds', () => {
  it("counts the busy time of every core, this process's spinning among it", () => {
    const before = machineBusySeconds();
    const until = Date.now() + 300;
    while (Date.now() < until);
    const busy = machineBusySeconds() - before;
    // 300 ms of one core spinning, at the kernel's 10 ms tick: at least 0.2 s, at most all cores' 0.3 s and some
    assert.ok(busy >= 0.2, `busy ${busy} s`);
    assert.ok(busy < 0.3 * 2 + 0.5, `busy ${busy} s`);
  });
});

describe('a benchmark script run by node', () => {
  it('ends a coded error with one line and exit code 1, no stack trace', () => {
    const script = join(import.meta.dirname, '..', '..', 'bench', 'paced-flows.js');
    const result = spawnSync(process.execPath, [script, '--policies', 'no-such-policy'], { encoding: 'utf8' });
    assert.equal(result.status, 1);
    const lines = result.stderr.trim().split('\n');
    assert.equal(lines.length, 1, result.stderr);
    // without nginx or bpftool the missing tool is named first; with both, the unknown policy
    assert.match(lines[0]!, /^trickle: .+ \[BENCH_ERR_(USAGE|MISSING_TOOL)\]$/);
  });
});
