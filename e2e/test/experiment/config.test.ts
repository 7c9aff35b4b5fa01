/** The checked-in experiments validate; bad ones are refused with the key and the reason. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { E2eError } from '../../src/errors.js';
import { linkOf, loadExperimentConfig, parseExperimentConfig } from '../../src/experiment/config.js';
import { planRuns } from '../../src/experiment/run.js';

const experiments = join(import.meta.dirname, '..', '..', '..', '..', 'experiments');

const minimal = {
  name: 'x',
  sessionSeconds: 30,
  seeds: [1, 2],
  groups: [
    { name: 'baseline1', policy: 'app-pacing' },
    { name: 'trickle', policy: 'trickle' },
  ],
  profiles: [{ name: 'fast', link: { rate: '20mbit', rtt: '20ms' } }],
  load: { dash: 2 },
};

function refused(input: unknown, pattern: RegExp): void {
  assert.throws(
    () => parseExperimentConfig(input),
    (error: unknown) => error instanceof E2eError && error.code === 'E2E_ERR_EXPERIMENT_CONFIG' && pattern.test(error.message),
  );
}

describe('experiment config', () => {
  it('the checked-in experiments are valid, and the paper-size one plans its runs', async () => {
    const ab = await loadExperimentConfig(join(experiments, 'trickle-ab.yaml'));
    assert.deepEqual(ab.groups.map((g) => g.name), ['baseline1', 'baseline2', 'trickle', 'shrunk-block', 'pacing', 'cmcd']);
    assert.deepEqual(ab.control, ['baseline1', 'baseline2']);
    const runs = planRuns(ab);
    // Alone, baseline2 would repeat baseline1: five isolated runs per profile that has them.
    assert.equal(runs.filter((r) => r.profile === 'high-bandwidth' && r.kind === 'isolated').length, 5);
    assert.equal(runs.filter((r) => r.profile === 'low-bandwidth').length, 3);
    // Sized for under 30 minutes: every run is the session plus the start spread (and a few seconds of setup).
    // Sized for under 30 minutes: a run measured 77 s for a 70 s session with a 5 s start spread.
    assert.ok(runs.length * (ab.sessionSeconds + ab.load.startSpreadSeconds + 3) < 30 * 60);
    const smoke = await loadExperimentConfig(join(experiments, 'smoke.yaml'));
    assert.ok(planRuns(smoke).length * (smoke.sessionSeconds + smoke.load.startSpreadSeconds + 10) < 5 * 60);
  });

  it('fills defaults, converts units, and freezes the result', () => {
    const config = parseExperimentConfig(minimal);
    assert.equal(config.startupSeconds, 35);
    assert.equal(config.load.probeIntervalMs, 100);
    assert.equal(config.transport.slowStartAfterIdle, true);
    const link = linkOf(config.profiles[0]!.link, 3);
    assert.equal(link.down.rateBps, 20e6);
    assert.equal(link.down.delayMs + link.up.delayMs, 20);
    assert.equal(link.seed, 3);
    assert.ok(Object.isFrozen(config) && Object.isFrozen(config.groups[0]));
  });

  it('refuses bad input with the key and the reason', () => {
    refused({ ...minimal, groups: [{ name: 'a', policy: 'app-pacing' }, { name: 'a', policy: 'trickle' }] }, /groups.*distinct/);
    refused({ ...minimal, groups: [{ name: 'a', policy: 'magic' }, { name: 'b', policy: 'trickle' }] }, /groups\.0\.policy/);
    refused({ ...minimal, control: ['baseline1', 'nobody'] }, /control: no group "nobody"/);
    refused({ ...minimal, profiles: [{ name: 'p', link: { rate: 'fast', rtt: '20ms' } }] }, /profiles\.0\.link.*rate "fast"/s);
    refused({ ...minimal, profiles: [{ name: 'p', link: { profile: 'moon' } }] }, /not a lab profile/);
    refused({ ...minimal, load: {} }, /no viewers/);
    refused({ ...minimal, extra: 1 }, /extra/);
  });

  it('says which file is not YAML or cannot be read', async () => {
    await assert.rejects(loadExperimentConfig('/nonexistent/experiment.yaml'), /cannot read \/nonexistent\/experiment.yaml/);
  });
});
