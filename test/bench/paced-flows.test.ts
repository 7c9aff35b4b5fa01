/**
 * The paced-flow benchmark's aim: the seconds a policy that sends each VBR block at gain x its own
 * R gives a run of a file's bytes, on a synthetic file whose blocks differ fourfold in rate.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ByteTimeMap, vbrBlocksOf, type ProgressiveLayout } from '@trickle/origin';
import { clientShares, pacedSeconds } from '../../bench/paced-flows.js';

const moovBytes = 1000;
const sampleSizes = [100_000, 100_000, 400_000, 400_000];

/** Four 1 s video samples after a 1,000-byte moov: with 2 s blocks, block 0 (moov + 200 kB) and block 1 (800 kB). */
function layout(): ProgressiveLayout {
  const offsets = Float64Array.from(
    sampleSizes,
    (_, i) => moovBytes + sampleSizes.slice(0, i).reduce((sum, size) => sum + size, 0),
  );
  return {
    fileSizeBytes: moovBytes + sampleSizes.reduce((sum, size) => sum + size, 0),
    moovStart: 0,
    mdatStart: moovBytes,
    faststart: true,
    fragmented: false,
    durationSec: 4,
    tracks: [
      {
        trackId: 1,
        kind: 'video',
        timescale: 1000,
        editShiftSec: 0,
        offsets,
        sizes: Uint32Array.from(sampleSizes),
        decodeTimesSec: Float64Array.from([0, 1, 2, 3]),
        durationsSec: Float64Array.from([1, 1, 1, 1]),
      },
    ],
  };
}

describe('pacedSeconds', () => {
  const file = layout();
  const blocks = vbrBlocksOf(new ByteTimeMap(file), 2, file.fileSizeBytes);

  it('gives the whole file its media time at R and that over the gain above it', () => {
    assert.equal(blocks.count, 2);
    assert.ok(Math.abs(pacedSeconds(blocks, 0, file.fileSizeBytes, () => 1) - 4) < 1e-9);
    assert.ok(Math.abs(pacedSeconds(blocks, 0, file.fileSizeBytes, () => 1.25) - 3.2) < 1e-9);
  });

  it('gives a run across a block edge each part at its own block rate, not the file mean', () => {
    const from = moovBytes + 100_000;
    const to = moovBytes + 200_000 + 400_000;
    const rate0 = (moovBytes + 200_000) / 2;
    const expected = 100_000 / rate0 + 400_000 / 400_000;
    assert.ok(Math.abs(pacedSeconds(blocks, from, to, () => 1) - expected) < 1e-9);
    // within the slow block: 200 kB take 1.99 s at its rate (the file's mean rate would say 0.8 s)
    assert.ok(Math.abs(pacedSeconds(blocks, moovBytes, moovBytes + 200_000, () => 1) - 200_000 / rate0) < 1e-9);
    assert.ok(200_000 / rate0 > 1.98);
  });

  it('applies the gain block by block (trickle: R at the floor, gain x R above it)', () => {
    const aboveFloorFrom = 300_000;
    const seconds = pacedSeconds(blocks, 0, file.fileSizeBytes, (rate) => (rate > aboveFloorFrom ? 1.2 : 1));
    assert.ok(Math.abs(seconds - (2 + 2 / 1.2)) < 1e-9);
  });
});

describe("the flow clients' shares", () => {
  it("splits every asset's flows over the processes, near-equal and in order, none lost", () => {
    const flows = [
      { url: 'a', count: 10_000 },
      { url: 'b', count: 3 },
    ];
    const shares = clientShares(flows, 3);
    assert.deepEqual(shares, [
      [
        { url: 'a', count: 3333 },
        { url: 'b', count: 1 },
      ],
      [
        { url: 'a', count: 3333 },
        { url: 'b', count: 1 },
      ],
      [
        { url: 'a', count: 3334 },
        { url: 'b', count: 1 },
      ],
    ]);
    assert.deepEqual(clientShares(flows, 1), [flows]);
    // More processes than flows: no empty client.
    assert.deepEqual(clientShares([{ url: 'a', count: 2 }], 4), [[{ url: 'a', count: 1 }], [{ url: 'a', count: 1 }]]);
  });
});
