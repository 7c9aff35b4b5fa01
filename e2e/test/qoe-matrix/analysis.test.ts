/**
 * The QoE matrix's cells and figures (pure): cell enumeration, per-cell estimates, goals with "too few", simulator
 * agreement.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SessionResult } from '@trickle/player-sim';
import {
  agreements,
  goalChecks,
  runConditions,
  sammyAgainstBulk,
  summarizeCell,
  type MatrixRunData,
} from '../../src/qoe-matrix/analysis.js';
import {
  cellsOf,
  parseMatrixPolicy,
  runsOf,
  type MatrixCell,
  type MatrixOptions,
} from '../../src/qoe-matrix/config.js';

const options: MatrixOptions = {
  links: ['dsl-6mbit', 'fast-20mbit'],
  policies: ['bulk', 'app-pacing', 'trickle-abr', 'pacing@bbr'].map(parseMatrixPolicy),
  players: ['dashjs', 'sim'],
  cmcd: ['off', 'on'],
  sessions: 3,
  sessionSeconds: 60,
  congestionControl: 'cubic',
  probeIntervalMs: 100,
  asset: 'demo',
  media: 'media',
};

function session(bitrateBps: number, rebuffers: number, startupMs = 500): SessionResult {
  return {
    startupDelayMs: startupMs,
    rebuffers: Array.from({ length: rebuffers }, (_, i) => ({ startMs: 10_000 * (i + 1), durationMs: 1000 })),
    sessionSec: 60,
    playedSec: 58,
    stalledSec: rebuffers,
    meanBitrateBps: bitrateBps,
    switches: 2,
    bytesDownloaded: 0,
    bytesWasted: 0,
    abandoned: false,
    segments: 30,
  };
}

function run(
  cell: MatrixCell,
  index: number,
  results: SessionResult[],
  queueingMs: number[],
  retransmitted = 0,
  afterStartupSec = 40,
  afterStartupRetransmitted?: number,
): MatrixRunData {
  return {
    version: 1,
    key: `${cell.id}#${index}`,
    cell,
    index,
    startedAt: '2026-11-23T00:00:00Z',
    durationMs: 60_000,
    sessions: results.map((result) => ({ result, abandonedRequests: 0, errors: [] })),
    network: {
      flows: 30,
      throttledFlows: 20,
      throttledRetransmittedSegments: retransmitted,
      throttledDataSegments: 1000,
      queueingMs,
      queueingAfterStartupMs: queueingMs,
      afterStartupSec,
      // Absent, as in runs written before the figure was recorded, unless given.
      ...(afterStartupRetransmitted === undefined
        ? {}
        : { afterStartupRetransmittedSegments: afterStartupRetransmitted, afterStartupDataSegments: 2000 }),
      bottleneckDrops: retransmitted,
    },
    labsAtOnce: 1,
    cores: 2,
    harnessRetries: 0,
  };
}

describe('QoE matrix cells', () => {
  it('crosses links, policies, players and CMCD, CMCD on only where the rule reads it', () => {
    const cells = cellsOf(options);
    const ids = cells.map((c) => c.id);
    assert.ok(ids.includes('dsl-6mbit/trickle-abr/dashjs+cmcd'));
    assert.ok(!ids.includes('dsl-6mbit/bulk/dashjs+cmcd'), 'bulk ignores CMCD: no cell of its own');
    assert.equal(cells.length, 2 * (4 + 1) * 2);
    assert.deepEqual(parseMatrixPolicy('pacing@bbr'), {
      label: 'pacing@bbr',
      policy: 'pacing',
      congestionControl: 'bbr',
    });
    assert.throws(() => parseMatrixPolicy('warp'), /no policy "warp"/);
    // Session index outermost: an early stop leaves the cells even.
    const runs = runsOf(cells, 3);
    assert.deepEqual(
      runs.slice(0, cells.length).map((r) => r.index),
      cells.map(() => 0),
    );
  });

  it('makes a cell per start: mid-asset cells beside the beginning, a bad start refused', () => {
    const cells = cellsOf({
      ...options,
      links: ['dsl-6mbit'],
      policies: [parseMatrixPolicy('bulk')],
      players: ['dashjs'],
      cmcd: ['off'],
      starts: [0, 60],
    });
    assert.deepEqual(
      cells.map((c) => [c.id, c.startSec]),
      [
        ['dsl-6mbit/bulk/dashjs', 0],
        ['dsl-6mbit/bulk/dashjs@60s', 60],
      ],
    );
    assert.deepEqual(
      cellsOf({ ...options, starts: undefined }).map((c) => c.startSec),
      cellsOf(options).map(() => 0),
      'no starts: every cell from the beginning',
    );
    assert.throws(() => cellsOf({ ...options, starts: [-5] }), /a start must be media seconds >= 0/);
    assert.throws(() => cellsOf({ ...options, starts: [Number.NaN] }), /a start must be media seconds >= 0/);
  });
});

describe('QoE matrix figures', () => {
  const cells = cellsOf({ ...options, links: ['fast-20mbit'], players: ['dashjs', 'sim'], cmcd: ['off'] });
  const cell = (policy: string, player: string) => cells.find((c) => c.policy.label === policy && c.player === player)!;

  it('estimates each cell with intervals, and calls cells below the minimum "too few"', () => {
    const runs = Array.from({ length: 10 }, (_, i) =>
      run(cell('bulk', 'dashjs'), i, [session(2.7e6 + i * 1e4, i === 0 ? 1 : 0)], [10, 20, 30, 40], 5),
    );
    const summary = summarizeCell(cell('bulk', 'dashjs'), runs);
    assert.equal(summary.sessions, 10);
    assert.equal(summary.tooFew, false);
    assert.ok(Math.abs(summary.meanBitrateMbps.value - 2.745) < 1e-9);
    assert.ok(
      summary.meanBitrateMbps.low <= summary.meanBitrateMbps.value &&
        summary.meanBitrateMbps.high >= summary.meanBitrateMbps.value,
    );
    assert.equal(summary.rebufferChancePercent.value, 10);
    assert.ok(summary.rebufferChancePercent.low < 10 && summary.rebufferChancePercent.high > 10, 'Wilson interval');
    assert.ok(Math.abs(summary.rebufferPerMinute.value - 0.1) < 1e-9, '1 rebuffer in 600 s of sessions');
    assert.equal(summary.throttledRetransmissionPercent.value, 0.5);
    assert.equal(summary.queueingP95Ms.value, 40, 'p95 of the pooled replies (linear interpolation of 40 values)');
    assert.equal(summarizeCell(cell('bulk', 'dashjs'), runs.slice(0, 3)).tooFew, true);
  });

  it('says what the machine did while sessions ran from their own records, old records counted as unknown', () => {
    const base = run(cell('bulk', 'dashjs'), 0, [session(2.7e6, 0)], [10]);
    const { labsAtOnce: _labs, cores: _cores, harnessRetries: _retries, ...old } = base;
    const conditions = runConditions([
      { ...base, labsAtOnce: 1, cores: 4, harnessRetries: 0 },
      { ...base, labsAtOnce: 2, cores: 2, harnessRetries: 1 },
      { ...base, labsAtOnce: 1, cores: 2, harnessRetries: 2 },
      old,
    ]);
    assert.deepEqual(conditions, {
      sessions: 4,
      labsAtOnce: 2,
      labsUnrecorded: 1,
      cores: 2,
      harnessRetries: 3,
      retriesUnrecorded: 1,
    });
    assert.deepEqual(runConditions([old]), {
      sessions: 1,
      labsAtOnce: null,
      labsUnrecorded: 1,
      cores: null,
      harnessRetries: 0,
      retriesUnrecorded: 1,
    });
  });

  it('checks the goals against bulk and application pacing, "too few" below the minimum', () => {
    const byCell = new Map<string, MatrixRunData[]>();
    const fill = (
      policy: string,
      player: string,
      n: number,
      bitrate: number,
      rebuffer: (i: number) => number,
      queueing: number[],
    ) =>
      byCell.set(
        cell(policy, player).id,
        Array.from({ length: n }, (_, i) => run(cell(policy, player), i, [session(bitrate, rebuffer(i))], queueing)),
      );
    fill('bulk', 'dashjs', 10, 2.8e6, () => 0, [30, 40, 50, 60]);
    fill('trickle-abr', 'dashjs', 10, 2.75e6, () => 0, [1, 2, 3, 4]);
    fill('app-pacing', 'dashjs', 10, 2.6e6, () => 0, [20, 30, 40, 50]);
    fill('bulk', 'sim', 3, 2.8e6, () => 0, [30]);
    fill('trickle-abr', 'sim', 3, 1.0e6, (i) => (i === 0 ? 2 : 0), [1]);
    fill('app-pacing', 'sim', 3, 1.0e6, () => 0, [30]);
    const data = { cells: cells.map((c) => summarizeCell(c, byCell.get(c.id) ?? [])), runsByCell: byCell };
    const goals = goalChecks(data, 'trickle-abr');
    const find = (goal: RegExp, scope: string) => goals.find((g) => goal.test(g.goal) && g.scope === scope)!;
    assert.equal(find(/mean bitrate >= 95 %/, 'fast-20mbit, dashjs').verdict, 'met');
    assert.match(find(/mean bitrate >= 95 %/, 'fast-20mbit, dashjs').measured, /^98\.2 /);
    assert.equal(find(/rebuffering chance not worse/, 'fast-20mbit, dashjs').verdict, 'met');
    assert.equal(find(/queueing p95 <= 25 %.*whole session/, 'fast-20mbit, dashjs').verdict, 'met');
    assert.equal(find(/queueing p95 <= 25 %.*whole session/, 'fast-20mbit, sim').verdict, 'too few');
    // The ratio carries its bootstrap interval over both cells' runs: a point where every run is alike, an interval
    // where trickle-abr's runs differ (every other one queues 1 ms longer).
    assert.match(find(/queueing p95 <= 25 %.*after the startup/, 'fast-20mbit, dashjs').measured, /\(8 \[8, 8\] %\)$/);
    const mine = cell('trickle-abr', 'dashjs').id;
    const varied = new Map(byCell).set(
      mine,
      byCell.get(mine)!.map((r) => ({
        ...r,
        network: { ...r.network, queueingAfterStartupMs: r.index % 2 === 0 ? [1, 2, 3, 4] : [2, 3, 4, 5] },
      })),
    );
    const ratio = goalChecks({ ...data, runsByCell: varied }, 'trickle-abr')
      .find((g) => /queueing p95 <= 25 %.*after the startup/.test(g.goal) && g.scope === 'fast-20mbit, dashjs')!
      .measured.match(/\((\d+) \[(\d+), (\d+)\] %\)$/)!
      .slice(1)
      .map(Number);
    // p95 5 ms (10 % of application pacing's 50); 4 ms (8 %) in resamples that draw 2 or fewer of the 5 longer runs.
    assert.deepEqual(ratio, [10, 8, 10]);
    // Labs that shared the cores, by the sessions' own records (a work directory can mix invocations): the probe
    // waited behind the browsers, the queueing goal is not judged; nor where a session did not record it.
    const queueingGoal = (labsAtOnce: (index: number) => number | undefined) => {
      const runsByCell = new Map(
        [...byCell].map(([id, runs]) => [id, runs.map((r) => ({ ...r, labsAtOnce: labsAtOnce(r.index) }))]),
      );
      return goalChecks({ ...data, runsByCell }, 'trickle-abr').find(
        (g) => /queueing p95 <= 25 %.*whole session/.test(g.goal) && g.scope === 'fast-20mbit, dashjs',
      )!;
    };
    const shared = queueingGoal((index) => (index === 4 ? 3 : 1));
    assert.equal(shared.verdict, 'not judged');
    assert.match(shared.measured, /; up to 3 labs at once: judge with `--parallel 1`$/);
    const unrecorded = queueingGoal((index) => (index < 2 ? undefined : 1));
    assert.equal(unrecorded.verdict, 'not judged');
    assert.match(unrecorded.measured, /; labs at once not recorded for 4 of 20 sessions: judge with/);
    assert.equal(queueingGoal(() => 1).verdict, 'met');
    // Agreement: the simulator against dash.js, cell by cell.
    const agreeing = agreements(data.cells).find((a) => a.policy === 'trickle-abr')!;
    assert.ok(Math.abs(agreeing.rebufferChanceDiffPoints - 100 / 3) < 1e-9);
    assert.equal(agreeing.within.rebufferChance, false);
    assert.ok(Math.abs(agreeing.meanBitrateRatio - 1 / 2.75) < 1e-9);
  });

  it("checks the network's side against sammy: met, missed or undecided by the difference's interval", () => {
    const sammyCells = cellsOf({
      ...options,
      links: ['fast-20mbit'],
      policies: ['sammy', 'trickle-abr'].map(parseMatrixPolicy),
      players: ['dashjs', 'hlsjs', 'sim'],
      cmcd: ['off'],
    });
    const at = (policy: string, player: string) =>
      sammyCells.find((c) => c.policy.label === policy && c.player === player)!;
    const byCell = new Map<string, MatrixRunData[]>();
    const fill = (
      policy: string,
      player: string,
      n: number,
      queueing: (i: number) => number[],
      retrans: (i: number) => number,
    ) =>
      byCell.set(
        at(policy, player).id,
        Array.from({ length: n }, (_, i) => run(at(policy, player), i, [session(2.8e6, 0)], queueing(i), retrans(i))),
      );
    // dash.js: trickle-abr below sammy on both figures in every run (met).
    fill(
      'trickle-abr',
      'dashjs',
      10,
      (i) => [1 + (i % 3), 2, 3],
      (i) => i % 2,
    );
    fill(
      'sammy',
      'dashjs',
      10,
      (i) => [20 + (i % 3), 25, 30],
      (i) => 10 + (i % 3),
    );
    // hls.js: trickle-abr above sammy (missed); sim: the same figures both ways, so the difference's interval holds 0.
    fill(
      'trickle-abr',
      'hlsjs',
      10,
      () => [40, 50],
      () => 30,
    );
    fill(
      'sammy',
      'hlsjs',
      10,
      () => [5, 6],
      () => 2,
    );
    fill(
      'trickle-abr',
      'sim',
      10,
      (i) => [i, 2 * i],
      (i) => i,
    );
    fill(
      'sammy',
      'sim',
      10,
      (i) => [9 - i, 2 * (9 - i)],
      (i) => 9 - i,
    );
    const data = { cells: sammyCells.map((c) => summarizeCell(c, byCell.get(c.id) ?? [])), runsByCell: byCell };
    const goals = goalChecks(data, 'trickle-abr');
    const verdict = (goal: RegExp, scope: string) => goals.find((g) => goal.test(g.goal) && g.scope === scope)?.verdict;
    for (const figure of [/retransmissions <= sammy's/, /queueing p95 after startup <= sammy's/]) {
      assert.equal(verdict(figure, 'fast-20mbit, dashjs'), 'met');
      assert.equal(verdict(figure, 'fast-20mbit, hlsjs'), 'missed');
      assert.equal(verdict(figure, 'fast-20mbit, sim'), 'undecided');
    }
    assert.match(
      goals.find((g) => /retransmissions <= sammy's/.test(g.goal) && g.scope === 'fast-20mbit, hlsjs')!.measured,
      /difference 2\.80 /,
    );
  });

  it("checks every response's retransmissions after startup against bulk's and sammy's, old runs without them no data", () => {
    const cells = cellsOf({
      ...options,
      links: ['3g-trace'],
      policies: ['bulk', 'sammy', 'trickle-abr'].map(parseMatrixPolicy),
      players: ['dashjs'],
      cmcd: ['off'],
    });
    const at = (policy: string) => cells.find((c) => c.policy.label === policy)!;
    const byCell = new Map<string, MatrixRunData[]>();
    const fill = (policy: string, afterStartupRetransmitted: (i: number) => number | undefined) =>
      byCell.set(
        at(policy).id,
        Array.from({ length: 10 }, (_, i) =>
          run(at(policy), i, [session(0.5e6, 1)], [100], 50, 160, afterStartupRetransmitted(i)),
        ),
      );
    // trickle-abr 0.05-0.1 % of its 2,000 segments a run; bulk 2-2.1 %; sammy's runs predate the figure.
    fill('trickle-abr', (i) => 1 + (i % 2));
    fill('bulk', (i) => 40 + (i % 3));
    fill('sammy', () => undefined);
    const data = { cells: cells.map((c) => summarizeCell(c, byCell.get(c.id) ?? [])), runsByCell: byCell };
    const mine = data.cells.find((c) => c.cell.id === at('trickle-abr').id)!;
    assert.ok(Math.abs(mine.retransmissionAfterStartupPercent.value - 0.075) < 1e-9);
    assert.ok(
      Number.isNaN(data.cells.find((c) => c.cell.id === at('sammy').id)!.retransmissionAfterStartupPercent.value),
    );
    const goals = goalChecks(data, 'trickle-abr').filter((g) => /retransmissions after startup/.test(g.goal));
    assert.deepEqual(
      goals.map((g) => [g.goal.replace(/.*<= (\w+)'s.*/, '$1'), g.scope, g.verdict]),
      [
        ['sammy', '3g-trace, dashjs', 'no data'],
        ['bulk', '3g-trace, dashjs', 'met'],
      ],
    );
    assert.match(goals[1]!.measured, /^0\.07 \[0\.\d\d, 0\.\d\d\] % vs 2\.0\d \[/);
  });

  it("sets sammy's own change against bulk beside the paper's, with no figure where bulk retransmitted nothing", () => {
    const cells = cellsOf({
      ...options,
      links: ['dsl-6mbit', 'fast-20mbit'],
      policies: ['bulk', 'sammy', 'trickle-abr'].map(parseMatrixPolicy),
      players: ['dashjs'],
      cmcd: ['off'],
    });
    const at = (link: string, policy: string) => cells.find((c) => c.link === link && c.policy.label === policy)!;
    const byCell = new Map<string, MatrixRunData[]>();
    const fill = (link: string, policy: string, queueingMs: number, afterStartupRetransmitted: (i: number) => number) =>
      byCell.set(
        at(link, policy).id,
        Array.from({ length: 8 }, (_, i) =>
          run(at(link, policy), i, [session(2e6, 0)], [queueingMs], 0, 160, afterStartupRetransmitted(i)),
        ),
      );
    // dsl-6mbit: sammy 30 of bulk's 40-41 segments of 2,000 a run (-25 %), queueing 60 against 80 ms (-25 %).
    fill('dsl-6mbit', 'bulk', 80, (i) => 40 + (i % 2));
    fill('dsl-6mbit', 'sammy', 60, () => 30);
    // fast-20mbit: bulk retransmitted nothing, so a change against it has no value.
    fill('fast-20mbit', 'bulk', 20, () => 0);
    fill('fast-20mbit', 'sammy', 10, (i) => i % 2);
    const data = { cells: cells.map((c) => summarizeCell(c, byCell.get(c.id) ?? [])), runsByCell: byCell };
    const [dsl, fast, ...rest] = sammyAgainstBulk(data);
    assert.equal(rest.length, 0, 'one row per place and player that has both sammy and bulk');
    assert.deepEqual([dsl!.place.link, dsl!.player, dsl!.sessions], ['dsl-6mbit', 'dashjs', { sammy: 8, bulk: 8 }]);
    const retransmissions = dsl!.retransmissionChangePercent;
    assert.ok(Math.abs(retransmissions.value - (100 * 30) / 40.5 + 100) < 1e-9, `${retransmissions.value}`);
    assert.ok(retransmissions.low <= retransmissions.value && retransmissions.value <= retransmissions.high);
    assert.ok(retransmissions.high < 0, 'fewer in every resample');
    assert.ok(Math.abs(dsl!.queueingP95ChangePercent.value + 25) < 1e-9);
    assert.equal(fast!.place.link, 'fast-20mbit');
    assert.ok(!Number.isFinite(fast!.retransmissionChangePercent.value), 'against none, no figure');
    assert.ok(Math.abs(fast!.queueingP95ChangePercent.value + 50) < 1e-9);
  });

  it('judges each start on its own, and says whether cells are long enough and the 3G-like chance narrow enough', () => {
    const placed = cellsOf({
      ...options,
      links: ['dsl-6mbit', '3g-trace'],
      policies: ['bulk', 'trickle-abr'].map(parseMatrixPolicy),
      players: ['dashjs'],
      cmcd: ['off'],
      starts: [0, 60],
    });
    const at = (link: string, policy: string, startSec: number) =>
      placed.find((c) => c.link === link && c.policy.label === policy && c.startSec === startSec)!;
    const byCell = new Map<string, MatrixRunData[]>();
    const fill = (cell: MatrixCell, n: number, bitrate: number, rebuffered: (i: number) => boolean, afterSec: number) =>
      byCell.set(
        cell.id,
        Array.from({ length: n }, (_, i) =>
          run(cell, i, [{ ...session(bitrate, rebuffered(i) ? 1 : 0), sessionSec: 190 }], [1, 2], 0, afterSec),
        ),
      );
    // From the beginning trickle-abr keeps bulk's bitrate; from 60 s it does not: the two are not pooled.
    fill(at('dsl-6mbit', 'bulk', 0), 8, 2.8e6, () => false, 150);
    fill(at('dsl-6mbit', 'trickle-abr', 0), 8, 2.8e6, () => false, 150);
    fill(at('dsl-6mbit', 'bulk', 60), 8, 2.8e6, () => false, 150);
    fill(at('dsl-6mbit', 'trickle-abr', 60), 8, 1.4e6, () => false, 100);
    // 3G-like: 24 sessions, half rebuffered (+-19 points), and 10 (about +-28).
    fill(at('3g-trace', 'bulk', 0), 24, 0.6e6, (i) => i % 2 === 0, 130);
    fill(at('3g-trace', 'trickle-abr', 0), 24, 0.6e6, (i) => i % 2 === 0, 130);
    fill(at('3g-trace', 'bulk', 60), 10, 0.6e6, (i) => i % 2 === 0, 130);
    fill(at('3g-trace', 'trickle-abr', 60), 10, 0.6e6, (i) => i % 2 === 0, 130);
    const data = { cells: placed.map((c) => summarizeCell(c, byCell.get(c.id) ?? [])), runsByCell: byCell };
    const goals = goalChecks(data, 'trickle-abr');
    const find = (goal: RegExp, scope: string) => goals.find((g) => goal.test(g.goal) && g.scope === scope);
    assert.equal(find(/mean bitrate >= 95 %/, 'dsl-6mbit, dashjs')?.verdict, 'met');
    assert.equal(find(/mean bitrate >= 95 %/, 'dsl-6mbit from 60 s, dashjs')?.verdict, 'missed');
    assert.equal(find(/sessions >= 180 s/, 'dsl-6mbit')?.verdict, 'met');
    assert.equal(find(/sessions >= 180 s/, 'dsl-6mbit from 60 s')?.verdict, 'missed', '100 s after startup');
    assert.match(find(/sessions >= 180 s/, 'dsl-6mbit from 60 s')!.measured, /the least, trickle-abr dashjs/);
    assert.equal(find(/within \+-20 points/, '3g-trace')?.verdict, 'met');
    assert.equal(find(/within \+-20 points/, '3g-trace from 60 s')?.verdict, 'missed');
    assert.equal(find(/within \+-20 points/, 'dsl-6mbit'), undefined, 'judged on the 3G-like trace only');
  });
});
