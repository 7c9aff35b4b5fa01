/** A population profile's Table 2 buckets and sim-vs-browser pairs on a small fixture with hand-computed answers. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FlowRecord } from '@trickle/origin';
import type { SessionResult } from '@trickle/player-sim';
import { linkPopulation } from '../../src/lab/population.js';
import { minimumPairs, simBrowserVerdicts, summarizePopulation } from '../../src/experiment/population-analysis.js';
import { runDataVersion, type RunData } from '../../src/experiment/run-data.js';
import type { SessionRecord } from '../../src/qoe/session-record.js';

let nextId = 1;
function progressive(group: string, startupGoodputBps: number, retransmissionRate: number): FlowRecord {
  return {
    id: nextId++,
    role: 'progressive',
    group,
    status: 200,
    startup: { bytes: 3e6, durationMs: 5000, goodputBps: startupGoodputBps },
    throttling: { bytes: 2e6, durationMs: 20_000, goodputBps: 0.9e6, retransmissionRate },
  } as unknown as FlowRecord;
}

function result(rebuffers: number, meanBitrateBps: number): SessionResult {
  return {
    startupDelayMs: 800,
    rebuffers: Array.from({ length: rebuffers }, (_, i) => ({ startMs: i * 5000, durationMs: 500 })),
    sessionSec: 60,
    playedSec: 58,
    stalledSec: 0.5 * rebuffers,
    meanBitrateBps,
    switches: 1,
    bytesDownloaded: 0,
    bytesWasted: 0,
    abandoned: false,
    segments: 30,
  };
}

/** A dash.js session as the harness records it (the fields asSessionResult reads). */
function browser(index: number, rebuffers: number, meanBitrateBps: number): SessionRecord {
  return {
    index,
    startupMs: 900,
    rebuffers: Array.from({ length: rebuffers }, (_, i) => ({ startMs: i * 5000, durationMs: 500 })),
    sessionMs: 60_000,
    meanBitrateBps,
    switches: 1,
    endReason: 'ended',
  } as unknown as SessionRecord;
}

const population = linkPopulation(
  [
    { rateBps: 6e6, rttMs: 40, bufferBytes: 60_000, lossRate: 0 },
    { rateBps: 1e6, rttMs: 200, bufferBytes: 50_000, lossRate: 0 },
  ],
  { source: 'dc1-like', seed: 1 },
);

function run(id: string, records: FlowRecord[], viewers: RunData['viewers'], browsers: SessionRecord[]): RunData {
  return {
    version: runDataVersion,
    id,
    profile: 'p',
    kind: 'mixed',
    seed: 1,
    group: null,
    link: { down: population.links[0]!.down, up: population.links[0]!.up, seed: 1 },
    population,
    startedAt: '',
    durationMs: 60_000,
    records,
    captures: [],
    timeSequences: [],
    viewers,
    browsers,
    probe: [],
    bottleneck: { sentPackets: 0, drops: 0 },
  };
}

describe('population analysis', () => {
  const runs = [
    run(
      'r1',
      [
        progressive('trickle', 5e6, 0.01),
        progressive('baseline1', 5e6, 0.04),
        progressive('trickle', 0.3e6, 0.05),
        progressive('baseline1', 0.3e6, 0.05),
        progressive('baseline2', 5e6, 0.03),
      ],
      [
        { kind: 'dash', index: 0, startOffsetMs: 0, group: 'trickle', result: result(0, 2e6) },
        { kind: 'dash', index: 1, startOffsetMs: 0, group: 'trickle', result: result(2, 1e6) },
      ],
      [browser(0, 0, 2.2e6), browser(1, 1, 1e6)],
    ),
  ];
  const summary = summarizePopulation(runs, { resamples: 200, trickleGroup: 'trickle', baselineGroup: 'baseline1' })!;

  it(
    "buckets progressive flows by their startup goodput, the paper's BW, and compares " +
      'trickle with the baseline in each',
    () => {
      assert.equal(summary.source, 'dc1-like');
      assert.equal(summary.viewersPerRun, 2);
      // Medians of two: the means of 6 and 1 Mbit/s, 40 and 200 ms, 80 and 400 ms of buffer.
      assert.deepEqual(summary.links, { count: 2, medianRateMbps: 3.5, medianRttMs: 120, medianBufferMs: 240 });
      const byLabel = new Map(summary.buckets!.map((b) => [b.label, b]));
      // 5 flows: 3 at 5 Mbit/s (4 - 8), 2 at 0.3 Mbit/s (< 0.5).
      assert.equal(byLabel.get('4 - 8')!.flowsPercent, 60);
      assert.equal(byLabel.get('< 0.5')!.flowsPercent, 40);
      assert.equal(byLabel.get('1 - 2')!.flowsPercent, 0);
      assert.ok(Math.abs(byLabel.get('4 - 8')!.improvementPercent.value - 75) < 1e-9, '1 - 1 % / 4 %');
      assert.equal(byLabel.get('< 0.5')!.improvementPercent.value, 0);
      assert.equal(byLabel.get('4 - 8')!.trickleFlows, 1);
      assert.ok(!Number.isFinite(byLabel.get('1 - 2')!.improvementPercent.value), 'no flows, no figure');
    },
  );

  it('pairs each browser with the simulated player of its index in the same run', () => {
    const agreement = summary.simVsBrowser!;
    assert.equal(agreement.pairs, 2);
    // Rebuffered: sim 1 of 2, browser 1 of 2: no difference in points.
    assert.equal(agreement.chanceDifferencePoints.value, 0);
    // Rebuffers per minute: sim 2 in 120 s, browser 1 in 120 s.
    assert.ok(Math.abs(agreement.simulated.rebufferFrequencyPerMin.value - 1) < 1e-9);
    assert.ok(Math.abs(agreement.frequencyRatio.value - 0.5) < 1e-9);
    // Means weighted by time played: about (2.2 + 1) / (2 + 1).
    assert.ok(Math.abs(agreement.bitrateRatio.value - 3.2 / 3) < 0.01, String(agreement.bitrateRatio.value));
    // Two pairs are too few to judge.
    assert.deepEqual(simBrowserVerdicts(agreement), { chance: null, frequency: null, bitrate: null });
    assert.deepEqual(simBrowserVerdicts({ ...agreement, pairs: minimumPairs }), {
      chance: true,
      frequency: false,
      bitrate: true,
    });
  });

  it('is null without population runs', () => {
    assert.equal(
      summarizePopulation([{ ...runs[0]!, population: undefined }], {
        resamples: 100,
        trickleGroup: 'trickle',
        baselineGroup: 'baseline1',
      }),
      null,
    );
  });
});
