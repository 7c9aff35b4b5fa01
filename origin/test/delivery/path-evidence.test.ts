/** When a connection's paced segments say the path held them back, and when they stop saying it (pure). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultDeliveryConfig } from '../../src/delivery/delivery-config.js';
import { nextPathHold, type PathHold, type PhaseOutcome } from '../../src/delivery/path-evidence.js';

const options = defaultDeliveryConfig.abr.pathHold;
const outcome = (aimBps: number, goodputBps: number, bytes = 100_000): PhaseOutcome => ({ aimBps, goodputBps, bytes });

describe('path evidence', () => {
  it('has the defaults the ABR-aware rule documents', () => {
    assert.deepEqual(options, { headroom: 1.25, limitedBelow: 0.7, recoveredAbove: 0.9, minPhaseBytes: 32_768 });
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
});
