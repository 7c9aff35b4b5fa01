/** The fallback backends behind ClampBackend, and argument checks shared by all of them. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { attachClamp, getMaxPacingRate, type AttachedClamp } from '../../src/index.js';

describe('pacing-rate and none backends', () => {
  let serverSide: Socket;
  let client: Socket;
  let close: () => void;

  before(async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const accepted = once(server, 'connection') as Promise<[Socket]>;
    client = connect((server.address() as { port: number }).port, '127.0.0.1');
    await once(client, 'connect');
    [serverSide] = await accepted;
    client.write('x');
    await once(serverSide, 'data');
    close = () => {
      client.destroy();
      serverSide.destroy();
      server.close();
    };
  });

  after(() => close());

  it('pacing-rate sets SO_MAX_PACING_RATE at gain x rate and says it is not a clamp', async () => {
    const clamp: AttachedClamp = await attachClamp({ prefer: 'pacing-rate' });
    assert.equal(clamp.backend, 'pacing-rate');
    clamp.setRate(serverSide, { rateBytesPerSec: 100_000 });
    assert.equal(getMaxPacingRate(serverSide), 120_000);
    clamp.setRate(serverSide, { rateBytesPerSec: 100_000, gain: 1.05 });
    assert.equal(getMaxPacingRate(serverSide), 105_000);
    assert.deepEqual(clamp.state(serverSide), { backend: 'pacing-rate', pacingRateBytesPerSec: 105_000 });
    clamp.setPackets(serverSide, 10);
    assert.ok((getMaxPacingRate(serverSide) ?? 0) > 0);
    assert.equal(clamp.stats().entries, 1);
    clamp.release(serverSide);
    assert.equal(getMaxPacingRate(serverSide), null);
    assert.equal(clamp.stats().entries, 0);
    assert.equal(clamp.stats().updatesApplied, 4);
  });

  it('none does nothing and reports so', async () => {
    const clamp = await attachClamp({ prefer: 'none' });
    assert.equal(clamp.backend, 'none');
    clamp.setRate(serverSide, { rateBytesPerSec: 1000 });
    assert.equal(clamp.state(serverSide), undefined);
    assert.deepEqual(clamp.stats(), { backend: 'none', entries: 0, updatesApplied: 0, errors: 0 });
  });

  it('rejects bad targets with NATIVE_ERR_ARGUMENT', async () => {
    const clamp = await attachClamp({ prefer: 'pacing-rate' });
    const argumentError = (error: unknown) => (error as { code?: string }).code === 'NATIVE_ERR_ARGUMENT';
    for (const bad of [
      { rateBytesPerSec: -5 },
      { rateBytesPerSec: Number.NaN },
      { rateBytesPerSec: 1000, gain: 0 },
      { rateBytesPerSec: 1000, minPackets: 0.5 },
    ]) {
      assert.throws(() => clamp.setRate(serverSide, bad), argumentError, JSON.stringify(bad));
    }
    assert.throws(() => clamp.setPackets(serverSide, 0), argumentError);
    assert.throws(() => clamp.setPackets(serverSide, Number.NaN), argumentError);
  });
});
