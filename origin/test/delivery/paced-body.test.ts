/** The paced body with a scripted driver and an in-memory source (no sockets): block cuts, phases, waits, aborts. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Block } from '../../src/delivery/enforcers/enforcer.js';
import { BlockTimer } from '../../src/delivery/block-timer.js';
import { PacedBody, type BlockDriver, type BlockSink } from '../../src/delivery/paced-body.js';

interface Log {
  readonly events: string[];
}

function driver(log: Log, options: { startupEndOffset: number; blockBytes: number; waits?: number[] }): BlockDriver {
  const waits = [...(options.waits ?? [])];
  return {
    startupEndOffset: options.startupEndOffset,
    blockBytes: options.blockBytes,
    readAheadBlocks: 0,
    rateAt: (offset, size) => offset + size,
    startThrottling: (nowMs, offset) => void log.events.push(`throttling at ${offset} (t=${nowMs})`),
    beforeBlock: (block: Block) => {
      const wait = waits.shift() ?? 0;
      log.events.push(`before ${block.offset}+${block.sizeBytes} t=${block.nowMs} wait ${wait}`);
      return wait;
    },
    written: (block, phase) =>
      void log.events.push(`${phase} ${block.offset}+${block.sizeBytes} R=${block.rateBytesPerSec}`),
  };
}

const source = (bytes: Buffer) => ({ read: (offset: number, size: number) => bytes.subarray(offset, offset + size) });

const timer = new BlockTimer();

async function drain(body: PacedBody): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('paced body', () => {
  it(
    'cuts startup at the throttling boundary to the byte, then asks before every ' +
      'throttled block, again after each wait',
    async () => {
      const bytes = Buffer.from(Array.from({ length: 700_000 }, (_, i) => i % 251));
      const log: Log = { events: [] };
      let clock = 0;
      const body = new PacedBody(
        source(bytes),
        100_000,
        699_999,
        driver(log, { startupEndOffset: 400_000, blockBytes: 65_536, waits: [0, 5, 0] }),
        timer,
        () => (clock += 1),
      );
      const sent = await drain(body);
      assert.deepEqual(sent, bytes.subarray(100_000));
      assert.deepEqual(log.events, [
        // Startup at full speed in 256 kB blocks, the last one ending exactly where throttling begins.
        'startup 100000+262144 R=362144',
        'startup 362144+37856 R=400000',
        'throttling at 400000 (t=3)',
        'before 400000+65536 t=3 wait 0',
        'throttling 400000+65536 R=465536',
        'before 465536+65536 t=4 wait 5',
        // The same block asked again after its wait, with the time then.
        'before 465536+65536 t=5 wait 0',
        'throttling 465536+65536 R=531072',
        'before 531072+65536 t=6 wait 0',
        'throttling 531072+65536 R=596608',
        'before 596608+65536 t=7 wait 0',
        'throttling 596608+65536 R=662144',
        'before 662144+37856 t=8 wait 0',
        'throttling 662144+37856 R=700000',
      ]);
    },
  );

  it('never throttles a range that ends before the startup boundary', async () => {
    const log: Log = { events: [] };
    const body = new PacedBody(
      source(Buffer.alloc(300_000)),
      0,
      299_999,
      driver(log, { startupEndOffset: 300_000, blockBytes: 65_536 }),
      timer,
    );
    assert.equal((await drain(body)).length, 300_000);
    assert.deepEqual(log.events, ['startup 0+262144 R=262144', 'startup 262144+37856 R=300000']);
  });

  it('leaves no timer behind when destroyed while a block waits on the block timer', async () => {
    const log: Log = { events: [] };
    const body = new PacedBody(
      source(Buffer.alloc(200_000)),
      0,
      199_999,
      driver(log, { startupEndOffset: 0, blockBytes: 65_536, waits: [0, 60_000] }),
      timer,
    );
    const before = process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
    body.on('data', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(
      process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length,
      before + 1,
      'the second block waits on the block timer',
    );
    assert.equal(timer.size, 1);
    body.destroy();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length, before);
    assert.equal(timer.size, 0);
    assert.deepEqual(
      log.events.filter((e) => /^throttling \d/.test(e)),
      ['throttling 0+65536 R=65536'],
    );
  });

  it('fails loudly on a short read', async () => {
    const log: Log = { events: [] };
    const body = new PacedBody(
      { read: () => Buffer.alloc(10) },
      0,
      99,
      driver(log, { startupEndOffset: 100, blockBytes: 65_536 }),
      timer,
    );
    await assert.rejects(drain(body), /short read: 10 of 100 bytes at offset 0/);
  });

  it(
    'into a sink: the same blocks and waits, each handed over once the previous one is ' +
      'in the socket, no bytes in the stream',
    async () => {
      const log: Log = { events: [] };
      let clock = 0;
      const pending: (() => void)[] = [];
      // Each send announces itself: the test waits for events, never for a time (a stalled machine
      // once fired a polling timer before the sink's start and the test stopped waiting).
      let announceSend: (() => void) | undefined;
      const sink: BlockSink = {
        start: (ready) => {
          log.events.push('start');
          setImmediate(() => ready(null));
        },
        send: (offset, sizeBytes, done) => {
          log.events.push(`send ${offset}+${sizeBytes}`);
          pending.push(() => done(null));
          announceSend?.();
          return false;
        },
        close: () => void log.events.push('close'),
      };
      const body = new PacedBody(
        { read: () => assert.fail('a sink body never reads') },
        100_000,
        499_999,
        driver(log, { startupEndOffset: 300_000, blockBytes: 65_536, waits: [0, 5] }),
        timer,
        () => (clock += 1),
        sink,
      );
      const ended = drain(body);
      const nextSend = () =>
        new Promise<'sent'>((resolve) => {
          announceSend = () => resolve('sent');
          if (pending.length > 0) resolve('sent');
        });
      // One block at a time: the next is asked for only when the sink says the previous is in the socket.
      while ((await Promise.race([nextSend(), ended.then(() => 'ended' as const)])) === 'sent') {
        // Room for a wrong second send to show up before the first is done (a stall only shrinks it).
        await new Promise((resolve) => setTimeout(resolve, 10));
        assert.equal(pending.length, 1, 'never two blocks in flight');
        assert.equal(body.allPushed, false);
        pending.shift()!();
      }
      assert.equal((await ended).length, 0);
      assert.equal(body.allPushed, true);
      assert.deepEqual(log.events, [
        'start',
        'startup 100000+200000 R=300000',
        'send 100000+200000',
        'throttling at 300000 (t=2)',
        'before 300000+65536 t=2 wait 0',
        'throttling 300000+65536 R=365536',
        'send 300000+65536',
        'before 365536+65536 t=3 wait 5',
        'before 365536+65536 t=4 wait 0',
        'throttling 365536+65536 R=431072',
        'send 365536+65536',
        'before 431072+65536 t=5 wait 0',
        'throttling 431072+65536 R=496608',
        'send 431072+65536',
        'before 496608+3392 t=6 wait 0',
        'throttling 496608+3392 R=500000',
        'send 496608+3392',
        'close',
      ]);
    },
  );

  it('into a sink that takes blocks at once: back to back until one must wait, then on waking', async () => {
    const log: Log = { events: [] };
    let clock = 0;
    const sink: BlockSink = {
      start: (ready) => ready(null),
      send: (offset, sizeBytes) => {
        log.events.push(`send ${offset}+${sizeBytes}`);
        return true;
      },
      close: () => void log.events.push('close'),
    };
    const body = new PacedBody(
      { read: () => assert.fail('a sink body never reads') },
      0,
      199_999,
      driver(log, { startupEndOffset: 0, blockBytes: 65_536, waits: [0, 0, 3, 0] }),
      timer,
      () => (clock += 1),
      sink,
    );
    assert.equal((await drain(body)).length, 0);
    assert.deepEqual(log.events, [
      'throttling at 0 (t=1)',
      'before 0+65536 t=1 wait 0',
      'throttling 0+65536 R=65536',
      'send 0+65536',
      'before 65536+65536 t=2 wait 0',
      'throttling 65536+65536 R=131072',
      'send 65536+65536',
      'before 131072+65536 t=3 wait 3',
      'before 131072+65536 t=4 wait 0',
      'throttling 131072+65536 R=196608',
      'send 131072+65536',
      'before 196608+3392 t=5 wait 0',
      'throttling 196608+3392 R=200000',
      'send 196608+3392',
      'close',
    ]);
  });

  it('into a sink: a send that throws destroys the body with its error and closes the sink', async () => {
    const log: Log = { events: [] };
    const sink: BlockSink = {
      start: (ready) => ready(null),
      send: () => {
        throw Object.assign(new Error('sendfile failed: Broken pipe'), { code: 'EPIPE' });
      },
      close: () => void log.events.push('close'),
    };
    const body = new PacedBody(
      { read: () => assert.fail('a sink body never reads') },
      0,
      99_999,
      driver(log, { startupEndOffset: 0, blockBytes: 65_536 }),
      timer,
      undefined,
      sink,
    );
    await assert.rejects(drain(body), { code: 'EPIPE' });
    assert.deepEqual(
      log.events.filter((e) => e === 'close'),
      ['close'],
    );
  });

  it('into a sink: destroyed mid-block, it closes the sink and sends nothing more', async () => {
    const log: Log = { events: [] };
    const sink: BlockSink = {
      start: (ready) => ready(null),
      send: (offset, sizeBytes) => {
        log.events.push(`send ${offset}+${sizeBytes}`);
        return false;
      },
      close: () => void log.events.push('close'),
    };
    const body = new PacedBody(
      { read: () => assert.fail('a sink body never reads') },
      0,
      199_999,
      driver(log, { startupEndOffset: 0, blockBytes: 65_536 }),
      timer,
      undefined,
      sink,
    );
    body.on('data', () => undefined);
    body.on('error', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    body.destroy();
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      log.events.filter((e) => e.startsWith('send') || e === 'close'),
      ['send 0+65536', 'close'],
    );
  });
});
