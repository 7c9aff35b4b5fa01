import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { undoneAfter } from '../../bench/interrupt.js';

const interruptModule = resolve(import.meta.dirname, '..', '..', 'bench', 'interrupt.js');

describe('undoOnInterrupt', () => {
  const dir = mkdtempSync(join(tmpdir(), 'trickle-interrupt-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('puts back what is still registered, newest first, when the process is signalled, and exits 130', async () => {
    const log = join(dir, 'undone');
    // Three changes: the first put back already (its removal called), the other two still registered.
    const script = `
      import { appendFileSync } from 'node:fs';
      const { undoOnInterrupt } = await import(${JSON.stringify(interruptModule)});
      const forgetFirst = undoOnInterrupt('first', () => appendFileSync(${JSON.stringify(log)}, 'first\\n'));
      undoOnInterrupt('second', () => appendFileSync(${JSON.stringify(log)}, 'second\\n'));
      undoOnInterrupt('third', async () => { await new Promise((r) => setTimeout(r, 10)); appendFileSync(${JSON.stringify(log)}, 'third\\n'); });
      forgetFirst();
      console.log('ready');
      setInterval(() => undefined, 1000);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    await once(child.stdout, 'data');
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 130);
    assert.equal(readFileSync(log, 'utf8'), 'third\nsecond\n');
  });

  it('undoneAfter puts back after its body, also when the body throws', async () => {
    const undone: string[] = [];
    assert.equal(
      await undoneAfter(
        'a',
        () => void undone.push('a'),
        async () => 'result',
      ),
      'result',
    );
    await assert.rejects(
      undoneAfter(
        'b',
        () => void undone.push('b'),
        async () => {
          throw new Error('the run failed');
        },
      ),
      /the run failed/,
    );
    assert.deepEqual(undone, ['a', 'b']);
  });
});
