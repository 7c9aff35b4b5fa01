/**
 * The throttling phase of a response as a schedule the kernel can hold: R by byte offset, cut where the
 * plan's R steps (a progressive file's VBR blocks; a segment's one rate). Neighbouring runs of equal R
 * are one piece. When there are more runs than the program holds, runs are merged, the cheapest merge
 * first: the one whose straight line (its bytes over the seconds they take at their own R) strays least
 * from the plan's time at any step inside it. A merged piece keeps its runs' total time, so the schedule's
 * time is the plan's to the microsecond at every piece edge (the invariant of the exact per-block rates);
 * between edges it strays by at most the largest merge's cost. Measured over every 12 s window of the plan's
 * time (startup 0): the demo's 120 s file (60 blocks) exactly (each block its own piece), the 300 s one (150
 * blocks, merged to 64 pieces) within +-0.9 % of the per-block time; cut at 64 kB and merged in equal numbers
 * of cuts, as before, their 1.5-1.7 MB pieces averaged scenes of 3 x different rates: -36 .. +125 % and
 * -32 .. +89 %. Pure.
 */
import { MinHeap } from './min-heap.js';
import type { RatePlan } from './rates/rate-rule.js';

/** A piece of the schedule in file offsets: [startOffset, endOffset) at rateBytesPerSec. */
export interface FilePiece {
  readonly startOffset: number;
  readonly endOffset: number;
  readonly rateBytesPerSec: number;
}

/** Relative difference under which neighbouring runs' rates are the same rate. */
const sameRateTolerance = 1e-9;

/** The plan's pieces over [throttleOffset, rangeEnd], at most `maxPieces` of them; empty when nothing is throttled. */
export function kernelSchedule(
  plan: Pick<RatePlan, 'rateAt' | 'stepsWithin'>,
  throttleOffset: number,
  rangeEnd: number,
  maxPieces: number,
): FilePiece[] {
  const runs = uniformRuns(plan, throttleOffset, rangeEnd + 1);
  return runs.length <= maxPieces ? runs : mergedRuns(runs, maxPieces);
}

/** The phase cut at the plan's steps, equal neighbours (up to float noise) as one run. */
function uniformRuns(
  plan: Pick<RatePlan, 'rateAt' | 'stepsWithin'>,
  startOffset: number,
  endOffset: number,
): FilePiece[] {
  const runs: FilePiece[] = [];
  if (startOffset >= endOffset) return runs;
  let from = startOffset;
  for (const to of [...plan.stepsWithin(startOffset, endOffset), endOffset]) {
    const rateBytesPerSec = plan.rateAt(from, to - from);
    const last = runs.at(-1);
    // One media block's rate computed over cuts at different offsets differs in its last digits: merged at the
    // bytes over the time both take, so the merge changes no time.
    if (last !== undefined && Math.abs(last.rateBytesPerSec - rateBytesPerSec) <= sameRateTolerance * rateBytesPerSec) {
      const lastSeconds = (last.endOffset - last.startOffset) / last.rateBytesPerSec;
      runs[runs.length - 1] = {
        ...last,
        endOffset: to,
        rateBytesPerSec: (to - last.startOffset) / (lastSeconds + (to - from) / rateBytesPerSec),
      };
    } else runs.push({ startOffset: from, endOffset: to, rateBytesPerSec });
    from = to;
  }
  return runs;
}

/** A candidate merge: dropping the edge at point `edge`, straying `costSec` from the plan; stale once `version` moved. */
interface Merge {
  readonly costSec: number;
  readonly edge: number;
  readonly version: number;
}

/** The runs merged down to `maxPieces` pieces, cheapest merge first (a heap of candidate merges: O(n log n) merges). */
function mergedRuns(runs: readonly FilePiece[], maxPieces: number): FilePiece[] {
  const count = runs.length;
  // Points 0..count: the runs' edges, with the plan's seconds from the phase's start.
  const offsets = new Float64Array(count + 1);
  const seconds = new Float64Array(count + 1);
  offsets[0] = runs[0]!.startOffset;
  runs.forEach((run, i) => {
    offsets[i + 1] = run.endOffset;
    seconds[i + 1] = seconds[i]! + (run.endOffset - run.startOffset) / run.rateBytesPerSec;
  });
  // The edges still standing, as a linked list over the points.
  const previous = Int32Array.from({ length: count + 1 }, (_, i) => i - 1);
  const next = Int32Array.from({ length: count + 1 }, (_, i) => i + 1);
  const versions = new Uint32Array(count + 1);
  /** How far a straight line from point `from` to point `to` strays from the plan's time at the points between. */
  const strayingSec = (from: number, to: number): number => {
    const secondsPerByte = (seconds[to]! - seconds[from]!) / (offsets[to]! - offsets[from]!);
    let most = 0;
    for (let j = from + 1; j < to; j++)
      most = Math.max(most, Math.abs(seconds[from]! + (offsets[j]! - offsets[from]!) * secondsPerByte - seconds[j]!));
    return most;
  };
  const merges = new MinHeap<Merge>((a, b) => a.costSec < b.costSec || (a.costSec === b.costSec && a.edge < b.edge));
  const consider = (edge: number) =>
    merges.push({ costSec: strayingSec(previous[edge]!, next[edge]!), edge, version: versions[edge]! });
  for (let edge = 1; edge < count; edge++) consider(edge);
  for (let pieces = count; pieces > maxPieces; ) {
    const merge = merges.pop()!;
    if (merge.version !== versions[merge.edge]) continue;
    const before = previous[merge.edge]!;
    const after = next[merge.edge]!;
    next[before] = after;
    previous[after] = before;
    versions[merge.edge]!++;
    pieces--;
    for (const neighbour of [before, after]) {
      if (neighbour === 0 || neighbour === count) continue;
      versions[neighbour]!++;
      consider(neighbour);
    }
  }
  const pieces: FilePiece[] = [];
  for (let from = 0, to = next[0]!; from < count; from = to, to = next[to]!)
    pieces.push({
      startOffset: offsets[from]!,
      endOffset: offsets[to]!,
      rateBytesPerSec: (offsets[to]! - offsets[from]!) / (seconds[to]! - seconds[from]!),
    });
  return pieces;
}
