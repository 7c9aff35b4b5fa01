/**
 * Which policy serves a response: ?policy= (when allowed), the connection's A/B group, rules, the default; and the
 * catalogue's pairs.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { policyCatalogue } from '../../src/delivery/catalogue.js';
import { deliverySchema } from '../../src/delivery/delivery-config.js';
import { buildPolicies, deliveryNeedsClamp } from '../../src/delivery/delivery-engine.js';
import { PolicySelector } from '../../src/delivery/policy-selection.js';

const config = (values: Record<string, unknown>) => deliverySchema.parse(values);

describe('policy selection', () => {
  it('takes ?policy= only when overrides are allowed, and names the unknown', () => {
    const open = new PolicySelector(config({ allowPolicyOverride: true }));
    assert.deepEqual(open.select({ asset: 'demo', role: 'segment', override: 'bulk', group: undefined }), {
      policy: 'bulk',
      source: 'override',
      reason: '?policy=bulk',
    });
    const bad = open.select({ asset: 'demo', role: 'segment', override: 'warp', group: undefined });
    assert.ok(
      'error' in bad && /unknown policy "warp"; known: bulk, app-pacing, .*trickle-abr/.test(bad.error),
      JSON.stringify(bad),
    );
    const closed = new PolicySelector(config({}));
    assert.deepEqual(closed.select({ asset: 'demo', role: 'segment', override: 'warp', group: undefined }), {
      policy: 'trickle-abr',
      source: 'default',
      reason: 'default policy',
    });
  });

  it('prefers the A/B group, then the first matching rule, then the default', () => {
    const selector = new PolicySelector(
      config({
        policy: 'pacing',
        rules: [
          { role: 'progressive', policy: 'trickle' },
          { asset: 'live', policy: 'bulk' },
        ],
      }),
    );
    const group = { name: 'b1', policy: 'app-pacing' as const, weight: 1 };
    assert.deepEqual(selector.select({ asset: 'demo', role: 'progressive', override: undefined, group }), {
      policy: 'app-pacing',
      source: 'group',
      reason: 'A/B group b1',
    });
    assert.deepEqual(selector.select({ asset: 'demo', role: 'progressive', override: undefined, group: undefined }), {
      policy: 'trickle',
      source: 'rule',
      reason: 'rule */progressive',
    });
    assert.deepEqual(selector.select({ asset: 'live', role: 'segment', override: undefined, group: undefined }), {
      policy: 'bulk',
      source: 'rule',
      reason: 'rule live/*',
    });
    assert.deepEqual(selector.select({ asset: 'demo', role: 'segment', override: undefined, group: undefined }), {
      policy: 'pacing',
      source: 'default',
      reason: 'default policy',
    });
  });

  it('draws A/B groups from a seeded generator: the same seed, the same sequence', () => {
    const groups = [
      { name: 'a', policy: 'bulk', weight: 1 },
      { name: 'b', policy: 'trickle', weight: 3 },
    ];
    const draw = () => {
      const selector = new PolicySelector(config({ ab: groups, abSeed: 9 }));
      return Array.from({ length: 40 }, () => selector.assignGroup()!.name);
    };
    const first = draw();
    assert.deepEqual(first, draw());
    assert.ok(first.includes('a') && first.includes('b'));
  });
});

describe('the policy catalogue', () => {
  it("pairs a rate rule with an enforcer per policy, the paper's groups as before", () => {
    const policies = buildPolicies(config({}));
    const table = Object.fromEntries(
      Object.entries(policies).map(([name, p]) => [
        name,
        [p.rate.name, p.enforcer.name, p.enforcer.headroom, p.enforcer.paced],
      ]),
    );
    assert.deepEqual(table, {
      bulk: ['unthrottled', 'none', 1, false],
      'app-pacing': ['media', 'token-bucket', 1.25, true],
      'app-pacing-16k': ['media', 'token-bucket-16k', 1.25, true],
      trickle: ['media', 'cwnd-clamp', 1.2, true],
      'trickle-min-rtt': ['media', 'cwnd-clamp-min-rtt', 1.2, true],
      pacing: ['media', 'kernel-pacing', 1.25, true],
      cmcd: ['abr', 'kernel-pacing', 1.25, true],
      'trickle-abr': ['abr', 'cwnd-clamp-min-rtt', 1.2, true],
      'trickle-abr-srtt': ['abr', 'cwnd-clamp', 1.2, true],
      sammy: ['sammy', 'kernel-pacing', 1, true],
    });
    assert.deepEqual(Object.keys(policyCatalogue), Object.keys(table));
  });

  it(
    'asks for the BPF program only where an enforcer runs in it (a clamp, or pacing in ' +
      'the kernel) or initial windows are set',
    () => {
      assert.equal(deliveryNeedsClamp(config({ policy: 'pacing' })), true, 'pacing runs its phase in the kernel');
      assert.equal(deliveryNeedsClamp(config({ policy: 'pacing', pacing: { inKernel: false } })), false);
      assert.equal(deliveryNeedsClamp(config({ policy: 'app-pacing' })), false);
      assert.equal(
        deliveryNeedsClamp(config({ policy: 'pacing', rules: [{ role: 'segment', policy: 'trickle-abr' }] })),
        true,
      );
      assert.equal(deliveryNeedsClamp(config({ policy: 'bulk', ab: 'a=bulk:1,b=trickle:1' })), true);
      assert.equal(deliveryNeedsClamp(config({ policy: 'bulk', transport: { initialWindowPackets: 40 } })), true);
      assert.equal(
        deliveryNeedsClamp(config({ policy: 'bulk', allowPolicyOverride: true })),
        true,
        'any policy may be asked for',
      );
      assert.equal(deliveryNeedsClamp(config({})), true, 'the default clamps');
    },
  );
});
