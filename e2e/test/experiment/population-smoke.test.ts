/**
 * A population experiment (experiments/population-smoke.yaml) end to end on the lab (root,
 * Chromium): each run draws its own links, every viewer's responses come from its own address
 * (so its own link), the browser on a host of its own shares a simulated player's link, and
 * results.json, summary.md and the report carry the population, the paper side by side, the
 * sim-vs-browser pairs and the population's effects beside its shared-bottleneck twin's.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { parseExperimentConfig, type ExperimentConfig } from '../../src/experiment/config.js';
import type { ExperimentResults } from '../../src/experiment/analysis.js';
import { runExperiment } from '../../src/experiment/run.js';
import type { RunData } from '../../src/experiment/run-data.js';
import { skipUnless, testMediaRoot } from '../helpers/requirements.js';

const skip = skipUnless('the population smoke experiment', { root: true, chromium: true });
const experiments = join(import.meta.dirname, '..', '..', '..', '..', 'experiments');

describe('trickle experiment experiments/population-smoke.yaml', { skip }, () => {
  let out: string;
  let config: ExperimentConfig;
  let results: ExperimentResults;

  before(async () => {
    out = await mkdtemp(join(tmpdir(), 'trickle-pop-smoke-'));
    const input = parseYaml(await readFile(join(experiments, 'population-smoke.yaml'), 'utf8')) as Record<
      string,
      unknown
    >;
    config = parseExperimentConfig({ ...input, media: testMediaRoot() });
    results = await runExperiment({ config, out, labName: 'expop' });
  });
  after(async () => {
    if (out !== undefined) await rm(out, { recursive: true, force: true });
  });

  it("attributes every viewer's responses to its own address, so its own link", async () => {
    for (const profile of ['dc1-like', 'dc2-like']) {
      const [file] = await readdir(join(out, 'runs', profile));
      const run = JSON.parse(await readFile(join(out, 'runs', profile, file!), 'utf8')) as RunData;
      const population = run.population!;
      assert.equal(population.source, profile);
      assert.equal(population.links.length, 7);
      const addresses = population.links.map((l) => l.address);
      // Besides the viewers' own, only the harness's few requests from the player host (the players' content index, the
      // origin's readiness check).
      const others = run.records.filter((r) => !addresses.includes(r.client.address ?? ''));
      assert.ok(
        others.every((r) => r.client.address === '10.73.0.2') && others.length <= 5,
        `${profile}: responses to no viewer: ${JSON.stringify(others.map((r) => [r.client.address, r.file]))}`,
      );
      // Viewers 0-2 progressive, 3-5 DASH, 6 the browser (on a copy of viewer 3's link).
      for (const link of population.links)
        assert.ok(
          run.records.some((r) => r.client.address === link.address),
          `${profile}: viewer ${link.viewer} (${link.address}) made no request`,
        );
      for (const record of run.records.filter((r) => r.client.address === addresses[0]))
        assert.equal(record.role, 'progressive');
      assert.deepEqual({ ...population.links[6]!.down }, { ...population.links[3]!.down });
      assert.ok(run.records.filter((r) => r.client.address === addresses[6]).every((r) => r.role === 'segment'));
      assert.equal(run.viewers.length, 6);
      assert.ok(
        run.viewers.every((v) => 'result' in v),
        JSON.stringify(run.viewers.filter((v) => 'error' in v)),
      );
      assert.equal(run.browsers.length, 1);
      assert.equal(run.probe.length, 0, 'no probe: a population has no shared bottleneck');
    }
  });

  it(
    'writes results.json, summary.md and the report with the population, the paper side ' +
      'by side and the sim-vs-browser pair',
    async () => {
      const written = JSON.parse(await readFile(join(out, 'results.json'), 'utf8')) as ExperimentResults;
      assert.deepEqual(written, JSON.parse(JSON.stringify(results)));
      const populations = written.profiles.filter((p) => p.population !== null);
      assert.deepEqual(
        written.profiles.map((p) => p.profile),
        ['dc1-like', 'dc2-like', 'dc2-like-shared'],
      );
      for (const profile of populations) {
        const population = profile.population!;
        assert.equal(population.viewersPerRun, 7);
        assert.equal(population.links.count, 7);
        assert.equal(population.buckets!.length, 6);
        assert.equal(population.simVsBrowser!.pairs, 1);
        assert.deepEqual(
          profile.kinds.map((k) => k.kind),
          ['progressive', 'segment'],
        );
      }
      assert.ok(
        written.profiles[0]!.population!.links.medianRateMbps > written.profiles[1]!.population!.links.medianRateMbps,
        'dc1-like links are faster than dc2-like ones',
      );
      const summary = await readFile(join(out, 'summary.md'), 'utf8');
      assert.match(summary, /### Side by side with the paper \(DC1;/);
      assert.match(summary, /### Side by side with the paper \(DC2;/);
      assert.match(summary, /Table 2, BW 4 - 8 Mbit\/s/);
      assert.match(summary, /too few \(1 pairs, fewer than 10\)/);
      // The shared twin: dc2-like's groups on one link, each effect beside the population's.
      assert.equal(written.designs.length, 1);
      const design = written.designs[0]!;
      assert.deepEqual([design.population, design.shared], ['dc2-like', 'dc2-like-shared']);
      // No bulk group here: every effect is a group's against baseline1, never baseline1's against itself.
      assert.ok(design.effects.length > 0 && design.effects.every((e) => e.group !== 'baseline1'));
      assert.match(summary, /## Unbiased and naive side by side: dc2-like \(a link per viewer\) and dc2-like-shared/);
      const report = await readFile(join(out, 'report.html'), 'utf8');
      assert.ok(
        report.includes('side by side with the paper (DC1)') &&
          report.includes('player-sim against dash.js on identical links') &&
          report.includes('Unbiased and naive side by side: dc2-like and dc2-like-shared'),
      );
    },
  );
});
