/**
 * The smoke experiment (experiments/smoke.yaml) end to end on the lab (root, Chromium): every
 * group has metrics from real flows, captures, viewers and the probe; a second invocation resumes
 * (keeps every finished run); the report renders its charts in Chromium (screenshot kept beside it).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { kernelPhaseOf } from '@trickle/origin';
import { launchChromium } from '../../src/index.js';
import { parseExperimentConfig, type ExperimentConfig } from '../../src/experiment/config.js';
import type { ExperimentResults } from '../../src/experiment/analysis.js';
import { runExperiment, type ExperimentProgress } from '../../src/experiment/run.js';
import type { RunData } from '../../src/experiment/run-data.js';
import { skipUnless, testMediaRoot } from '../helpers/requirements.js';

const skip = skipUnless('the smoke experiment', { root: true, chromium: true });
const experiments = join(import.meta.dirname, '..', '..', '..', '..', 'experiments');

/** What a group's records of one kind say (for a failure): size, time, how each ended, why. */
async function recordsStory(out: string, kind: string, group: string): Promise<string> {
  const lines: string[] = [];
  for (const name of await readdir(join(out, 'runs', 'fast'))) {
    const run = JSON.parse(await readFile(join(out, 'runs', 'fast', name), 'utf8')) as RunData;
    for (const r of run.records)
      if (r.group === group && r.role === kind)
        lines.push(
          `${name} #${r.id}: ${r.bytes} B in ${r.durationMs} ms, completed ${r.completed}, drained ${r.drained}, ` +
            `backend ${r.backend}, phase ${JSON.stringify(kernelPhaseOf(r))}: ${r.reason}`,
        );
  }
  return lines.length === 0 ? 'none' : lines.join(' | ');
}

describe('trickle experiment experiments/smoke.yaml', { skip }, () => {
  let out: string;
  let config: ExperimentConfig;
  let results: ExperimentResults;
  const progress: ExperimentProgress[] = [];

  before(async () => {
    out = await mkdtemp(join(tmpdir(), 'trickle-smoke-'));
    const input = parseYaml(await readFile(join(experiments, 'smoke.yaml'), 'utf8')) as Record<string, unknown>;
    config = parseExperimentConfig({ ...input, media: testMediaRoot() });
    results = await runExperiment({ config, out, labName: 'expsm', onProgress: (p) => progress.push(p) });
  });
  after(async () => {
    if (out !== undefined) await rm(out, { recursive: true, force: true });
  });

  it('measures every group: flows, throttling-phase metrics, captures and viewers', async () => {
    const written = JSON.parse(await readFile(join(out, 'results.json'), 'utf8')) as ExperimentResults;
    assert.deepEqual(
      written.profiles.map((p) => p.profile),
      ['fast'],
    );
    const [profile] = written.profiles;
    assert.deepEqual(
      profile!.kinds.map((k) => k.kind),
      ['progressive', 'segment'],
    );
    for (const kind of profile!.kinds) {
      assert.deepEqual(
        kind.rows.map((r) => r.group),
        ['baseline1', 'baseline2', 'trickle'],
      );
      for (const row of kind.rows) {
        const what = `${kind.kind}/${row.group}`;
        if (!(row.flows > 0 && row.throttledFlows > 0))
          assert.fail(
            `${what}: ${row.throttledFlows} throttled of ${row.flows} flows; ` +
              `its records: ${await recordsStory(out, kind.kind, row.group)}`,
          );
        assert.ok(row.sessions > 0, `${what}: viewer sessions`);
        for (const [name, estimate] of Object.entries({
          retransmission: row.retransmissionRatePercent,
          srtt: row.srttThrottledMs,
          srttAtStartupEnd: row.srttAtStartupEndMs,
          rebufferChance: row.rebufferChancePercent,
        })) {
          assert.ok(Number.isFinite(estimate.value), `${what}: ${name} measured`);
        }
        assert.ok(
          row.srttThrottledMs.value >= 20,
          `${what}: srtt ${row.srttThrottledMs.value} ms is at least the link's 20 ms`,
        );
      }
      assert.ok(kind.cdfs.retransmissionRatePercent.length > 0 && kind.cdfs.srttThrottledMs.length > 0);
    }
    // app-pacing's 64 kB blocks leave as bursts in the capture; trickle's clamp keeps them few.
    // Counted on the progressive responses: the demo's segments (30-110 kB) have too few bytes
    // left after their startup phase for blocks to show (measured: 0-6 bursts per group and run).
    const throttledBursts = new Map<string, number>();
    for (const name of await readdir(join(out, 'runs', 'fast'))) {
      const run = JSON.parse(await readFile(join(out, 'runs', 'fast', name), 'utf8')) as RunData;
      const records = new Map(run.records.map((r) => [r.id, r]));
      for (const c of run.captures) {
        const record = records.get(c.recordId);
        if (record?.role === 'progressive')
          throttledBursts.set(
            record.group ?? '',
            (throttledBursts.get(record.group ?? '') ?? 0) + c.throttledBursts.length,
          );
      }
    }
    const baselineBursts = (throttledBursts.get('baseline1') ?? 0) + (throttledBursts.get('baseline2') ?? 0);
    assert.ok(
      baselineBursts >= 10,
      `application pacing has bursts in the throttling phase (${JSON.stringify([...throttledBursts])})`,
    );
    assert.ok(
      (throttledBursts.get('trickle') ?? 0) * 5 < baselineBursts,
      `trickle has far fewer bursts than application pacing (${JSON.stringify([...throttledBursts])})`,
    );
    assert.deepEqual(
      profile!.timeSequences.map((t) => t.group),
      ['baseline1', 'baseline2', 'trickle'],
    );
    for (const sequence of profile!.timeSequences)
      assert.ok(sequence.points.length > 50 && sequence.zoom.length > 0, `${sequence.group}: time-sequence points`);
    // Alone, baseline2 would repeat baseline1's run: it has none.
    assert.deepEqual(
      profile!.queueing.map((q) => q.label),
      ['all groups (seed 1)', 'baseline1 alone', 'trickle alone'],
    );
    for (const q of profile!.queueing) {
      assert.ok(q.all.samples > 100, `${q.label}: ${q.all.samples} probe samples`);
      assert.ok(
        q.throttling.samples > 0 && q.throttling.samples < q.all.samples,
        `${q.label}: ${q.throttling.samples} of them outside startup phases`,
      );
    }
    assert.ok(
      profile!.runs.every((r) => r.errors === 0 && r.flows > 0),
      JSON.stringify(profile!.runs),
    );
    for (const csv of ['flows.csv', 'sessions.csv', 'groups.csv'])
      assert.ok((await readFile(join(out, csv), 'utf8')).split('\n').length > 3, `${csv} has rows`);
    const summary = await readFile(join(out, 'summary.md'), 'utf8');
    for (const group of ['baseline1 (app-pacing)', 'baseline2 (app-pacing)', 'trickle (trickle)'])
      assert.equal(summary.split(`| ${group} |`).length, 3, `summary.md: ${group} in both tables`);
    assert.equal(results.name, 'smoke');
  });

  it('resumes: a second invocation keeps every finished run', async () => {
    const runFile = join(out, 'runs', 'fast', 'mixed-s1.json');
    const before = (await stat(runFile)).mtimeMs;
    const again: ExperimentProgress[] = [];
    await runExperiment({ config, out, labName: 'expsm', onProgress: (p) => again.push(p) });
    assert.deepEqual(
      again.map((p) => p.stage),
      ['resumed', 'resumed', 'resumed'],
    );
    assert.equal((await stat(runFile)).mtimeMs, before);
    assert.ok(
      progress.some((p) => p.stage === 'playing') && progress.at(-1)!.fraction === 1,
      'the first invocation reported progress to the end',
    );
  });

  it('renders the report in Chromium: tables and every chart drawn', async () => {
    const chromium = await launchChromium();
    try {
      const page = await chromium.context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (error) => errors.push(String(error)));
      await page.goto(pathToFileURL(join(out, 'report.html')).href);
      await page.evaluate(() =>
        (window as unknown as { chartsRendered: Promise<unknown> }).chartsRendered.then(() => true),
      );
      const charts = await page.locator('.chart').count();
      assert.ok(charts >= 10, `${charts} charts`);
      assert.equal(await page.locator('.chart svg').count(), charts, 'every chart drew an SVG');
      assert.ok(
        (await page
          .locator('.chart svg .mark-line path, .chart svg .mark-symbol path, .chart svg .mark-rect path')
          .count()) > charts,
        'the charts have marks',
      );
      assert.ok((await page.locator('table').count()) >= 8);
      assert.deepEqual(errors, []);
      await page.setViewportSize({ width: 1280, height: 1000 });
      await page.screenshot({ path: join(out, 'report.png'), fullPage: true });
      assert.ok((await stat(join(out, 'report.png'))).size > 50_000);
    } finally {
      await chromium.close();
    }
  });
});
