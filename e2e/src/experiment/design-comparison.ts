/**
 * Unbiased and naive side by side (issue 37). An A/B test over one shared bottleneck is biased when the groups'
 * traffic interacts: a paced group leaves room that an unpaced one takes, in the same queue (Spang et al., "Unbiased
 * experiments in congested networks", IMC 2021). A population of per-viewer access links is the unbiased design. Each
 * effect of a group, measured in both, and how far the two designs differ.
 */
import {
  minimumVerdictConnections,
  type DesignComparison,
  type DesignEffect,
  type DesignVerdict,
  type GroupRow,
  type ProfileSummary,
} from './analysis.js';
import { differenceOfIndependent, formatEstimate, median, type Estimate } from './statistics.js';

interface EffectPick {
  readonly effect: (baseline: string, bulk: string) => string;
  readonly pick: (row: GroupRow) => Estimate | undefined;
  /** The reference group of this effect (the baseline, or bulk). */
  readonly against: 'baseline' | 'bulk';
}

const effectPicks: readonly EffectPick[] = [
  {
    effect: (baseline) => `retransmissions (throttling), % lower than ${baseline}`,
    pick: (row) => row.retransmissionImprovementPercent,
    against: 'baseline',
  },
  {
    effect: (baseline) => `srtt (throttling), % lower than ${baseline}`,
    pick: (row) => row.srttImprovementPercent,
    against: 'baseline',
  },
  {
    effect: (_baseline, bulk) => `retransmissions (whole responses), % lower than ${bulk}`,
    pick: (row) => row.versusBulk?.retransmissionLowerPercent,
    against: 'bulk',
  },
  {
    effect: (_baseline, bulk) => `srtt at the end, % lower than ${bulk}`,
    pick: (row) => row.versusBulk?.srttLowerPercent,
    against: 'bulk',
  },
];

const noEstimate: Estimate = { value: Number.NaN, low: Number.NaN, high: Number.NaN, n: 0 };

function verdictOf(population: Estimate, shared: Estimate, difference: Estimate, connections: number): DesignVerdict {
  if (!Number.isFinite(population.value) || !Number.isFinite(shared.value)) return 'no data';
  if (connections < minimumVerdictConnections) return 'too few';
  if (!Number.isFinite(difference.low) || !Number.isFinite(difference.high)) return 'no data';
  return difference.low <= 0 && difference.high >= 0 ? 'agree' : 'differ';
}

/**
 * Every effect the two profiles both report: per transfer kind, each group against the baseline (the throttling
 * phase) and against unpaced delivery (whole responses, when the experiment has a group whose policy is bulk).
 * Effects neither design could measure (a reference group against itself, bulk's throttling phase) are left out.
 */
export function compareDesigns(population: ProfileSummary, shared: ProfileSummary, baseline: string): DesignComparison {
  const effects: DesignEffect[] = [];
  for (const populationKind of population.kinds) {
    const sharedKind = shared.kinds.find((k) => k.kind === populationKind.kind);
    if (sharedKind === undefined) continue;
    const bulk = populationKind.rows.find((r) => r.policy === 'bulk')?.group ?? 'bulk';
    for (const row of populationKind.rows) {
      const sharedRow = sharedKind.rows.find((r) => r.group === row.group);
      if (sharedRow === undefined) continue;
      for (const { effect, pick, against } of effectPicks) {
        if (row.group === (against === 'baseline' ? baseline : bulk)) continue;
        const populationEffect = pick(row) ?? noEstimate;
        const sharedEffect = pick(sharedRow) ?? noEstimate;
        if (!Number.isFinite(populationEffect.value) && !Number.isFinite(sharedEffect.value)) continue;
        const difference = differenceOfIndependent(sharedEffect, populationEffect);
        const connections = Math.min(populationEffect.n, sharedEffect.n);
        effects.push({
          kind: populationKind.kind,
          group: row.group,
          policy: row.policy,
          effect: effect(baseline, bulk),
          population: populationEffect,
          shared: sharedEffect,
          difference,
          verdict: verdictOf(populationEffect, sharedEffect, difference, connections),
          connections,
        });
      }
    }
  }
  const judged = effects.filter((e) => e.verdict === 'agree' || e.verdict === 'differ');
  return {
    population: population.profile,
    shared: shared.profile,
    effects,
    judged: judged.length,
    differ: judged.filter((e) => e.verdict === 'differ').length,
    medianAbsoluteDifferencePoints: median(judged.map((e) => Math.abs(e.difference.value))),
  };
}

/** The comparison in a sentence, for the reports. */
export function designReading(design: DesignComparison): string {
  const spread = Number.isFinite(design.medianAbsoluteDifferencePoints)
    ? `; the median effect moved ${design.medianAbsoluteDifferencePoints.toFixed(0)} points between them`
    : '';
  return (
    `Each group's effect from the population (the unbiased design: every viewer on its own access link) and from ` +
    `the same groups on one shared bottleneck (the naive design: their traffic meets in one queue; Spang et al., ` +
    `IMC 2021). Shared - population in percentage points, with a 95 % interval from the two intervals (MOVER); ` +
    `"differ" when it excludes 0, "too few" under ${minimumVerdictConnections} connections on a side. ` +
    `${design.differ} of ${design.judged} judged effects differ between the designs${spread}.`
  );
}

/** The comparison's table, effect by effect, for summary.md and report.html alike. */
export function designTable(design: DesignComparison): { columns: string[]; rows: string[][] } {
  return {
    columns: [
      'transfer',
      'group',
      'effect',
      'population',
      'shared bottleneck',
      'shared - population (points)',
      'verdict',
    ],
    rows: design.effects.map((e) => [
      e.kind,
      `${e.group} (${e.policy})`,
      e.effect,
      formatEstimate(e.population, 0),
      formatEstimate(e.shared, 0),
      formatEstimate(e.difference, 0),
      e.verdict,
    ]),
  };
}
