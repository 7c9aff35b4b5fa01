import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AbAssigner, parseAbSpec } from '../../src/delivery/ab.js';
import { isOriginError } from '../../src/errors.js';

const policies = ['bulk', 'app-pacing', 'app-pacing-16k', 'trickle', 'pacing', 'cmcd'];

describe('A/B assignment', () => {
  it('parses groups, with names for A/A controls, and names bad specs', () => {
    assert.deepEqual(parseAbSpec('bulk:25,trickle:75', policies), [
      { name: 'bulk', policy: 'bulk', weight: 25 },
      { name: 'trickle', policy: 'trickle', weight: 75 },
    ]);
    assert.equal(parseAbSpec('baseline1=app-pacing:25,baseline2=app-pacing:25', policies)[1]!.name, 'baseline2');
    for (const bad of ['bulk', 'nope:10', 'bulk:0', 'bulk:10,bulk:10', 'a b:1'])
      assert.throws(
        () => parseAbSpec(bad, policies),
        (e: unknown) => isOriginError(e, 'ORIGIN_ERR_CONFIG'),
        bad,
      );
  });

  it('assigns in proportion to the weights, reproducibly for a seed', () => {
    const groups = parseAbSpec(
      'baseline1=app-pacing:25,baseline2=app-pacing:25,trickle:25,app-pacing-16k:25',
      policies,
    );
    const counts = new Map<string, number>();
    const assigner = new AbAssigner(groups, 7);
    const n = 40_000;
    for (let i = 0; i < n; i++) {
      const group = assigner.assign().name;
      counts.set(group, (counts.get(group) ?? 0) + 1);
    }
    // Binomial sd at p = 0.25, n = 40,000 is ~87: +-500 is more than 5 sd.
    for (const group of groups)
      assert.ok(Math.abs(counts.get(group.name)! - n / 4) < 500, `${group.name}: ${counts.get(group.name)}`);
    const first = Array.from(
      { length: 50 },
      (
        (a) => () =>
          a.assign().name
      )(new AbAssigner(groups, 7)),
    );
    const again = Array.from(
      { length: 50 },
      (
        (a) => () =>
          a.assign().name
      )(new AbAssigner(groups, 7)),
    );
    assert.deepEqual(first, again);
    const other = Array.from(
      { length: 50 },
      (
        (a) => () =>
          a.assign().name
      )(new AbAssigner(groups, 8)),
    );
    assert.notDeepEqual(first, other);
  });
});
