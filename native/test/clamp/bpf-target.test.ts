/**
 * What the BPF program knows of a socket's pacing once user space writes the socket a new target (root, the real
 * program, loopback). The origin lifts a response's SO_MAX_PACING_RATE when the response ends; the next response's
 * schedule must not inherit the program's note of the rate it last set, or the program skips setting that same rate
 * again and the response leaves unpaced (sammy's segments at a full buffer, one after another on a kept-alive hls.js
 * connection, ran at the link's rate: 2.1 x their pace rate in 93 of 95 such responses, 2026-12-07).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { attachClamp, getMaxPacingRate, setMaxPacingRate, teardownClamp, type AttachedClamp } from '../../src/index.js';
import { rootSkipReason } from '../helpers/privilege.js';

const skip = rootSkipReason('the BPF target tests');
const pinDir = '/run/trickle/bpf-test-target';
const cgroup = 'trickle-test-target';

/** Polls `done` every 5 ms; fails with `what` after 5 s (the program acts on the next acknowledgement: microseconds). */
async function until(done: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 5000;
  while (!done()) {
    assert.ok(performance.now() < deadline, `not within 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("the BPF program's pacing across a connection's responses", { skip }, () => {
  let clamp: AttachedClamp;
  let server: Server;
  let serverSide: Socket;
  let client: Socket;

  before(async () => {
    await teardownClamp({ pinDir, cgroup }).catch(() => undefined);
    clamp = await attachClamp({ prefer: 'bpf', cgroupPath: cgroup, pinDir, join: true });
    assert.equal(clamp.backend, 'bpf', `the bpf clamp attached (${clamp.fallbackReason ?? ''})`);
    server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const accepted = once(server, 'connection');
    client = connect(port, '127.0.0.1');
    client.resume();
    [serverSide] = (await accepted) as [Socket];
  });

  after(async () => {
    client?.destroy();
    serverSide?.destroy();
    server?.close();
    clamp?.close();
    await teardownClamp({ pinDir, cgroup }).catch(() => undefined);
  });

  it("sets the next response's rate after user space lifted the last one's, when the two are the same", async () => {
    const rateBytesPerSec = 250_000;
    // Paced from the first byte the socket sends (as sammy's are), and longer than anything written here.
    const paceFromHere = () =>
      clamp.setSchedule(serverSide, {
        baseBytes: 0,
        throttleOffsetBytes: 0,
        pieces: [{ endOffsetBytes: 1 << 30, rateBytesPerSec }],
        graceUs: 200_000,
        limit: 'pacing',
        gain: 1,
      });
    paceFromHere();
    serverSide.write(Buffer.alloc(256 << 10));
    await until(() => getMaxPacingRate(serverSide) === rateBytesPerSec, 'the program paced the first response');
    assert.equal(clamp.state(serverSide)?.pacingRateBytesPerSec, rateBytesPerSec);

    // The first response's end as the origin's: its pacing lifted, its schedule left; then the next one's schedule.
    setMaxPacingRate(serverSide, null);
    clamp.release(serverSide, { mode: 'gradual' });
    paceFromHere();
    assert.equal(
      clamp.state(serverSide)?.pacingRateBytesPerSec,
      undefined,
      "a target user space wrote does not claim the socket's pacing rate",
    );
    assert.equal(getMaxPacingRate(serverSide), null);
    serverSide.write(Buffer.alloc(256 << 10));
    await until(() => getMaxPacingRate(serverSide) === rateBytesPerSec, 'the program paced the next response');
  });
});
