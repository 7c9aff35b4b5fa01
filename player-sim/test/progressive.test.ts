import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { realClock } from '../src/live.js';
import { ProgressivePlayback, runProgressive, type ProgressiveMedia } from '../src/progressive.js';

/** 1000 bytes for 10 s of media, linear: 100 bytes a second. */
const media: ProgressiveMedia = { sizeBytes: 1000, durationSec: 10, mediaSecAtByte: (bytes) => bytes / 100 };
const settings = { startupThresholdSec: 2, resumeThresholdSec: 2, sessionSeconds: 20 };

describe('progressive playback', () => {
  it('starts, stalls exactly where the playhead meets the playable edge, resumes and plays to the end', () => {
    const playback = new ProgressivePlayback(media, settings, 0);
    playback.onBytes(500, 200); // 2 s playable: starts at 500 ms
    playback.onBytes(1500, 300); // playhead 1 s, playable 3 s
    playback.onBytes(5000, 400); // the playhead reached 3 s at 3500 ms: stalled since
    playback.onBytes(6000, 500); // 2 s ahead again: resumes after 2500 ms
    playback.onBytes(7000, 1000); // complete
    const result = playback.finish(20_000);
    assert.equal(result.startupDelayMs, 500);
    assert.deepEqual(result.rebuffers, [{ startMs: 3500, durationMs: 2500 }]);
    assert.equal(result.sessionSec, 20);
    assert.equal(result.playedSec, 10);
    assert.equal(result.stalledSec, 2.5);
    assert.equal(result.meanBitrateBps, 800);
    assert.equal(result.bytesDownloaded, 1000);
    assert.equal(result.bytesWasted, 0);
    assert.equal(result.switches, 0);
  });

  it('counts a stall still open when the viewer leaves, and the bytes not yet played as wasted', () => {
    const playback = new ProgressivePlayback(media, settings, 0);
    playback.onBytes(1000, 200);
    const result = playback.finish(5000);
    assert.deepEqual(result.rebuffers, [{ startMs: 3000, durationMs: 2000 }]);
    assert.equal(result.stalledSec, 2);
    assert.equal(result.playedSec, 2);
    assert.equal(result.bytesWasted, 0);
    const ahead = new ProgressivePlayback(media, settings, 0);
    ahead.onBytes(1000, 800);
    const left = ahead.finish(3000);
    assert.equal(left.playedSec, 2);
    assert.equal(left.bytesWasted, 600);
    assert.deepEqual(left.rebuffers, []);
  });

  it('reports a session that never started, without stalls', () => {
    const playback = new ProgressivePlayback(media, settings, 0);
    playback.onBytes(1000, 100);
    const result = playback.finish(3000, true);
    assert.equal(result.startupDelayMs, null);
    assert.deepEqual(result.rebuffers, []);
    assert.equal(result.stalledSec, 0);
    assert.equal(result.abandoned, true);
  });

  it("connects from the local address it is given (a population viewer's own link)", async () => {
    const seen: (string | undefined)[] = [];
    const server = createServer((request, response) => {
      seen.push(request.socket.remoteAddress);
      response.end(Buffer.alloc(1000));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/progressive.mp4`;
      // A one-second session: the download is all this checks (the session then waits out its length).
      const short = { ...settings, sessionSeconds: 1 };
      const result = await runProgressive({ url, media, clock: realClock, settings: short, localAddress: '127.0.0.2' });
      assert.equal(result.bytesDownloaded, 1000);
      await runProgressive({ url, media, clock: realClock, settings: short });
      assert.deepEqual(seen, ['127.0.0.2', '127.0.0.1']);
    } finally {
      server.close();
    }
  });
});
