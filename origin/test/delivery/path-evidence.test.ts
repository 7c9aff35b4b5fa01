/** When a connection's paced segments say the path held them back, and when they stop saying it (pure). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultDeliveryConfig } from '../../src/delivery/delivery-config.js';
import {
  initialWindowInUse,
  linkRateOfTransfer,
  nextPathHold,
  pathAfterFullSpeed,
  slowStartTransferSec,
  type FullSpeedOutcome,
  type PathHold,
  type PhaseOutcome,
} from '../../src/delivery/path-evidence.js';

const options = defaultDeliveryConfig.abr.pathHold;
const outcome = (aimBps: number, goodputBps: number, bytes = 100_000): PhaseOutcome => ({ aimBps, goodputBps, bytes });

describe('path evidence', () => {
  it('has the defaults the ABR-aware rule documents', () => {
    assert.deepEqual(options, {
      headroom: 1.25,
      limitedBelow: 0.7,
      recoveredAbove: 0.9,
      minPhaseBytes: 32_768,
      fullSpeedExtraRtts: 1,
      floorPackets: 4,
    });
  });

  it('holds after a segment reached less than 0.7 of its aim, at 1.25 x what it got', () => {
    assert.equal(nextPathHold(undefined, outcome(2e6, 1.5e6), options), undefined, '0.75 of the aim: not held back');
    assert.deepEqual(nextPathHold(undefined, outcome(2e6, 600e3), options), {
      holdBps: 750e3,
      goodputBps: 600e3,
      aimBps: 2e6,
    });
  });

  it('keeps holding while the link stays where it was, and lets go once a segment reaches 0.9 of its held aim', () => {
    // A 600 kbit/s link: the held aim is 750, the link still gives 600 (0.8 of it): held, at the same place.
    let hold: PathHold | undefined = nextPathHold(undefined, outcome(2e6, 600e3), options);
    for (let segment = 0; segment < 5; segment++) {
      hold = nextPathHold(hold, outcome(hold!.holdBps, 600e3), options);
      assert.equal(hold?.holdBps, 750e3);
    }
    // The link grew to 640: followed up.
    hold = nextPathHold(hold, outcome(750e3, 640e3), options);
    assert.equal(hold?.holdBps, 800e3);
    // A segment that reached 0.9 of its held aim: the path no longer holds it back.
    assert.equal(nextPathHold(hold, outcome(800e3, 730e3), options), undefined);
  });

  it('learns nothing from a short phase or one without figures', () => {
    const hold = nextPathHold(undefined, outcome(2e6, 600e3), options);
    assert.equal(nextPathHold(hold, outcome(2e6, 2e6, 20_000), options), hold, 'a few round trips say little');
    assert.equal(nextPathHold(undefined, outcome(2e6, 100e3, 20_000), options), undefined);
    assert.equal(nextPathHold(hold, outcome(0, 600e3), options), hold);
    assert.equal(nextPathHold(hold, outcome(2e6, 0), options), hold);
    assert.equal(nextPathHold(hold, outcome(Number.NaN, 600e3), options), hold);
  });

  // A transfer's facts on a 50 ms base RTT, Linux's initial window of 10 x 1448 bytes.
  const transfer = (bytes: number, durationMs: number, fields: Partial<FullSpeedOutcome> = {}): FullSpeedOutcome => ({
    bytes,
    durationMs,
    retransmittedSegments: 0,
    minRttUs: 50_000,
    mssBytes: 1448,
    initialWindowPackets: 10,
    ...fields,
  });

  it('models a full-speed transfer as slow start from the initial window, then the link', () => {
    // 100 kB by slow start alone: 14,480 + 28,960 + 57,920 bytes, three round trips.
    assert.ok(Math.abs(slowStartTransferSec(transfer(100_000, 0), Infinity, 0.05) - 0.15) < 1e-9);
    // 600 kB over 8 Mbit/s and 100 ms: three rounds of ramp (101,360 bytes), the window then carries the link
    // (115,840 bytes a round trip against 100,000), 498,640 bytes drain at 8 Mbit/s, the last ack a round trip on.
    const sec = slowStartTransferSec(transfer(600_000, 0), 8e6, 0.1);
    assert.ok(Math.abs(sec - (0.3 + (498_640 * 8) / 8e6 + 0.1)) < 1e-9, String(sec));
    // Its goodput reads two thirds of the link (5.3 Mbit/s); its duration shows the link's rate.
    const rateBps = linkRateOfTransfer(transfer(600_000, sec * 1000, { minRttUs: 100_000 }), 1);
    assert.ok(rateBps !== undefined && Math.abs(rateBps / 8e6 - 1) < 0.002, String(rateBps));
    // 300 kB in 598.6 ms: slow start alone takes five round trips (0.5 s), within one of that: no evidence.
    assert.equal(linkRateOfTransfer(transfer(300_000, 598.6, { minRttUs: 100_000 }), 1), undefined);
  });

  it('takes the link from a full-speed segment that shows one, at 1.25 x its rate, and from no other', () => {
    // 100 kB in 1.2265 s over a 50 ms base RTT: a 680 kbit/s link from the first round trip on.
    const shown = pathAfterFullSpeed(undefined, transfer(100_000, 1226.5), options);
    assert.ok(shown !== undefined && Math.abs(shown.goodputBps / 680e3 - 1) < 0.002, JSON.stringify(shown));
    assert.equal(shown.aimBps, undefined);
    assert.ok(Math.abs(shown.holdBps / (1.25 * 680e3) - 1) < 0.002);
    // 41,940 bytes in 378 ms over 152 ms (a 7.5 Mbit/s link in abr-slow3): slow start alone takes 304 ms, the rest
    // is delayed acks and the request's turn, not the link.
    assert.equal(pathAfterFullSpeed(undefined, transfer(41_940, 378, { minRttUs: 152_000 }), options), undefined);
    const paced = nextPathHold(undefined, outcome(2e6, 600e3), options);
    assert.equal(
      pathAfterFullSpeed(paced, transfer(100_000, 1226.5, { retransmittedSegments: 2 }), options),
      paced,
      'a loss breaks the model: the evidence stays',
    );
    assert.equal(pathAfterFullSpeed(paced, transfer(20_000, 1226.5), options), paced, 'few bytes');
    assert.equal(pathAfterFullSpeed(paced, transfer(100_000, 1226.5, { minRttUs: 0 }), options), paced, 'no RTT');
    // Newer evidence replaces a paced segment's; of several full-speed segments the most one showed counts (a
    // concurrent transfer on the same link shows less).
    assert.ok(Math.abs(pathAfterFullSpeed(paced, transfer(100_000, 1226.5), options)!.goodputBps / 680e3 - 1) < 0.002);
    const slower = pathAfterFullSpeed(shown, transfer(100_000, 2400), options);
    assert.equal(slower?.goodputBps, shown.goodputBps);
  });

  it('lets the first paced segment after full speed confirm or end the hold', () => {
    const hold = pathAfterFullSpeed(undefined, transfer(100_000, 1226.5), options);
    // Aimed at the held 850 and got 680 (0.8): still the link's limit.
    assert.ok(Math.abs(nextPathHold(hold, outcome(850e3, 680e3), options)!.holdBps / 850e3 - 1) < 1e-9);
    // Got 800 (0.94): the link was faster than the startup showed.
    assert.equal(nextPathHold(hold, outcome(850e3, 800e3), options), undefined);
  });

  it('judges a paced phase too short for its goodput by the model: a slow link holds, a fast one says nothing', () => {
    const figures = (durationMs: number, minRttUs: number) => ({
      durationMs,
      minRttUs,
      mssBytes: 1448,
      initialWindowPackets: 10,
    });
    // A 2 s audio segment of abr-dc2-ab48 (32,183 B aimed at 1.24 Mbit/s) over a 221 kbit/s link with a 213 ms
    // base RTT took 1,344.7 ms: the model gives the link (227 kbit/s) where the goodput read 191.
    const audio = (durationMs: number, minRttUs: number, goodputBps: number): PhaseOutcome => ({
      aimBps: 1_241_708,
      goodputBps,
      bytes: 32_183,
      transfer: figures(durationMs, minRttUs),
    });
    const held = nextPathHold(undefined, audio(1344.681, 212_700, 191_468), options);
    assert.ok(held !== undefined && Math.abs(held.goodputBps / 227_347 - 1) < 0.002, JSON.stringify(held));
    assert.ok(Math.abs(held.holdBps / (1.25 * held.goodputBps) - 1) < 1e-9);
    // The same bytes on a 20 ms path in 80-140 ms (slow start's two round trips, a delayed ACK, the request's
    // turn): 2.1-4.3 Mbit/s, the aim reached: nothing held.
    for (const durationMs of [60, 80, 140])
      assert.equal(nextPathHold(undefined, audio(durationMs, 20_000, 3e6), options), undefined, String(durationMs));
    // Within one round trip of slow start alone: too short to say, the evidence stays (here: a hold).
    assert.equal(nextPathHold(held, audio(847, 422_500, 303_945), options), held);
    // Under two initial windows (28,960 B): one or two round trips say nothing, however long they took.
    const tiny: PhaseOutcome = { aimBps: 1_241_708, goodputBps: 141_326, bytes: 3003, transfer: figures(170, 75_500) };
    assert.equal(nextPathHold(undefined, tiny, options), undefined);
    assert.equal(nextPathHold(held, tiny, options), held);
    // Held at 284 kbit/s, the next audio segment reaches 0.8 of it by the model: still held. One that reads faster
    // keeps the hold: on a warm connection the model reads the link high, so a short phase never lets go.
    const again = nextPathHold(held, { ...audio(1344.681, 212_700, 191_468), aimBps: held.holdBps }, options);
    assert.ok(again !== undefined && Math.abs(again.holdBps / held.holdBps - 1) < 1e-9);
    assert.equal(nextPathHold(held, { ...audio(700, 212_700, 370e3), aimBps: held.holdBps }, options), held);
    // A short phase below 0.7 of its aim under a hold from a long one: the newer, lower evidence holds.
    const fromVideo = nextPathHold(undefined, outcome(2e6, 600e3), options);
    const lower = nextPathHold(fromVideo, audio(1344.681, 212_700, 191_468), options);
    assert.ok(lower !== undefined && Math.abs(lower.goodputBps / 227_347 - 1) < 0.002, JSON.stringify(lower));
  });

  it("starts the model from the initial window the kernel applied, Linux's 10 otherwise", () => {
    assert.equal(initialWindowInUse({ packets: 32, status: 'applied' }), 32);
    for (const status of ['failed', 'unsupported', 'pending'])
      assert.equal(initialWindowInUse({ packets: 32, status }), 10, status);
    assert.equal(initialWindowInUse(undefined), 10);
  });
});
