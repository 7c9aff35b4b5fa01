/** The checked-in experiments validate; bad ones are refused with the key and the reason. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { E2eError } from '../../src/errors.js';
import { linkOf, loadExperimentConfig, parseExperimentConfig } from '../../src/experiment/config.js';
import { planRuns, populationOfRun } from '../../src/experiment/run.js';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';

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
    (error: unknown) =>
      error instanceof E2eError && error.code === 'E2E_ERR_EXPERIMENT_CONFIG' && pattern.test(error.message),
  );
}

describe('experiment config', () => {
  it('the checked-in experiments are valid, and the paper-size one plans its runs', async () => {
    const ab = await loadExperimentConfig(join(experiments, 'trickle-ab.yaml'));
    assert.deepEqual(
      ab.groups.map((g) => g.name),
      ['baseline1', 'baseline2', 'trickle', 'shrunk-block', 'pacing', 'cmcd'],
    );
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
    // Every file there loads (a renamed policy or group fails here, not an hour into a run).
    const files = (await readdir(experiments)).filter((name) => name.endsWith('.yaml'));
    assert.ok(files.length >= 5, files.join(', '));
    for (const file of files) assert.ok(planRuns(await loadExperimentConfig(join(experiments, file))).length > 0, file);
    const slow = await loadExperimentConfig(join(experiments, 'abr-slow-links.yaml'));
    assert.deepEqual(
      slow.groups.map((g) => g.policy),
      ['app-pacing', 'trickle-abr', 'trickle-abr-srtt', 'bulk', 'sammy'],
    );
    assert.equal(planRuns(slow).length, 12, 'eight dc2-like runs and four dc1-like');
  });

  it('fills defaults, converts units, and freezes the result', () => {
    const config = parseExperimentConfig(minimal);
    assert.equal(config.startupSeconds, 35);
    assert.equal(config.load.probeIntervalMs, 100);
    assert.equal(config.transport.slowStartAfterIdle, true);
    const link = linkOf(config.profiles[0]!.link!, 3);
    assert.equal(link.down.rateBps, 20e6);
    assert.equal(link.down.delayMs + link.up.delayMs, 20);
    assert.equal(link.seed, 3);
    assert.ok(Object.isFrozen(config) && Object.isFrozen(config.groups[0]));
  });

  it('refuses bad input with the key and the reason', () => {
    refused(
      {
        ...minimal,
        groups: [
          { name: 'a', policy: 'app-pacing' },
          { name: 'a', policy: 'trickle' },
        ],
      },
      /groups.*distinct/,
    );
    refused(
      {
        ...minimal,
        groups: [
          { name: 'a', policy: 'magic' },
          { name: 'b', policy: 'trickle' },
        ],
      },
      /groups\.0\.policy/,
    );
    refused({ ...minimal, control: ['baseline1', 'nobody'] }, /control: no group "nobody"/);
    refused(
      { ...minimal, profiles: [{ name: 'p', link: { rate: 'fast', rtt: '20ms' } }] },
      /profiles\.0\.link.*rate "fast"/s,
    );
    refused({ ...minimal, profiles: [{ name: 'p', link: { profile: 'moon' } }] }, /not a lab profile/);
    refused({ ...minimal, load: {} }, /no viewers/);
    refused({ ...minimal, extra: 1 }, /extra/);
  });

  it(
    'takes a population instead of a link: a distribution or a CSV, one of them, no ' +
      'cross traffic, a DASH twin per browser',
    () => {
      const population = parseExperimentConfig({
        ...minimal,
        profiles: [{ name: 'dc1', population: { distribution: 'dc1-like', uplinkRate: '500mbit' } }],
        load: { progressive: 3, dash: 2, browsers: 1 },
      });
      assert.deepEqual(population.profiles[0]!.population, { distribution: 'dc1-like', seed: 1, uplinkRate: 500e6 });
      refused(
        { ...minimal, profiles: [{ name: 'p', population: { distribution: 'dc9-like' } }] },
        /profiles\.0\.population\.distribution: not a link distribution; known: dc1-like, dc2-like/,
      );
      refused(
        { ...minimal, profiles: [{ name: 'p', population: { distribution: 'dc1-like', csv: 'links.csv' } }] },
        /one of them/,
      );
      refused(
        {
          ...minimal,
          profiles: [{ name: 'p', link: { rate: '20mbit', rtt: '20ms' }, population: { distribution: 'dc1-like' } }],
        },
        /a link \(one shared by all viewers\) or a population/,
      );
      refused({ ...minimal, profiles: [{ name: 'p' }] }, /a link \(one shared by all viewers\) or a population/);
      refused(
        {
          ...minimal,
          profiles: [{ name: 'p', population: { distribution: 'dc1-like' } }],
          load: { dash: 2, crossTrafficFlows: 1 },
        },
        /crossTrafficFlows to 0/,
      );
      refused(
        {
          ...minimal,
          profiles: [{ name: 'p', population: { distribution: 'dc1-like' } }],
          load: { dash: 1, browsers: 2 },
        },
        /load\.browsers/,
      );
    },
  );

  it('pairs a shared link with a population (sharedBottleneckOf): the naive design beside the unbiased one', () => {
    const population = { name: 'dc2', population: { distribution: 'dc2-like' } };
    const shared = { name: 'dc2-shared', link: { rate: '70mbit', rtt: '180ms' }, sharedBottleneckOf: 'dc2' };
    const paired = parseExperimentConfig({ ...minimal, profiles: [population, shared] });
    assert.equal(paired.profiles[1]!.sharedBottleneckOf, 'dc2');
    const message = /profiles\.1\.sharedBottleneckOf: a shared link \(this profile\) can stand for a population/;
    refused({ ...minimal, profiles: [population, { ...shared, sharedBottleneckOf: 'nowhere' }] }, message);
    refused(
      {
        ...minimal,
        profiles: [
          { ...population, name: 'fast' },
          { ...shared, sharedBottleneckOf: 'dc2' },
        ],
      },
      message,
    );
    refused(
      {
        ...minimal,
        profiles: [shared, { name: 'dc2', link: { rate: '1mbit', rtt: '180ms' } }],
      },
      /profiles\.0\.sharedBottleneckOf/,
    );
    refused({ ...minimal, profiles: [population, { ...population, name: 'p2', sharedBottleneckOf: 'dc2' }] }, message);
  });

  it(
    "draws each run's population from the profile's seed and the run's, browsers on " + "their DASH twins' links",
    async () => {
      const config = parseExperimentConfig({
        ...minimal,
        profiles: [{ name: 'dc2', population: { distribution: 'dc2-like', seed: 4 } }],
        load: { progressive: 3, dash: 2, browsers: 2 },
      });
      const first = await populationOfRun(config.profiles[0]!.population!, config.load, 1);
      assert.equal(first.links.length, 7);
      assert.deepEqual(
        first.links.map((l) => l.address),
        ['10.73.1.1', '10.73.1.2', '10.73.1.3', '10.73.1.4', '10.73.1.5', '10.73.1.6', '10.73.1.7'],
      );
      // Browsers 0 and 1 (viewers 5, 6) on copies of DASH players 0 and 1 (viewers 3, 4).
      assert.deepEqual({ ...first.links[5]!, viewer: 0, address: '' }, { ...first.links[3]!, viewer: 0, address: '' });
      assert.deepEqual({ ...first.links[6]!, viewer: 0, address: '' }, { ...first.links[4]!, viewer: 0, address: '' });
      assert.deepEqual(await populationOfRun(config.profiles[0]!.population!, config.load, 1), first);
      assert.notDeepEqual((await populationOfRun(config.profiles[0]!.population!, config.load, 2)).links, first.links);
      const dir = await mkdtemp(join(tmpdir(), 'trickle-population-'));
      const csv = join(dir, 'links.csv');
      await writeFile(csv, 'rate,rtt,buffer\n6mbit,40ms,64kb\n1mbit,200ms,50kb\n');
      const fromCsv = parseExperimentConfig({
        ...minimal,
        profiles: [{ name: 'csv', population: { csv } }],
        load: { progressive: 1, dash: 1, browsers: 1 },
      });
      const rows = await populationOfRun(fromCsv.profiles[0]!.population!, fromCsv.load, 1);
      assert.deepEqual(
        rows.links.map((l) => l.down.rateBps),
        [6e6, 1e6, 1e6],
      );
      const tooMany = parseExperimentConfig({
        ...minimal,
        profiles: [{ name: 'csv', population: { csv } }],
        load: { progressive: 2, dash: 1 },
      });
      await assert.rejects(
        populationOfRun(tooMany.profiles[0]!.population!, tooMany.load, 1),
        /has 2 links; the load has 3 simulated viewers/,
      );
    },
  );

  it('says which file is not YAML or cannot be read', async () => {
    await assert.rejects(
      loadExperimentConfig('/nonexistent/experiment.yaml'),
      /cannot read \/nonexistent\/experiment.yaml/,
    );
  });
});
