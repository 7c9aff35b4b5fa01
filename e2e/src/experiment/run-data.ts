/** What one experiment run leaves on disk (runs/<profile>/<run>.json): the input of the analysis. */
import type { FlowRecord } from '@trickle/origin';
import type { SessionRecord } from '../qoe/session-record.js';
import type { LinkSpec } from '../lab/link-spec.js';
import type { LinkPopulation } from '../lab/population.js';
import type { ProbeSample } from '../lab/measure.js';
import type { LossPhase } from './responses.js';
import type { ViewerReport } from './viewers.js';

/** A response's capture summary (the packets themselves stay in the run's pcap, deleted after analysis). */
export interface ResponseCaptureSummary {
  readonly recordId: number;
  readonly dataPackets: number;
  readonly retransmittedPackets: number;
  readonly bursts: readonly number[];
  readonly throttledBursts: readonly number[];
  readonly lossPhases: Readonly<Record<LossPhase, number>>;
}

/** Bytes over time of one sample transfer (the paper's time-sequence graphs). */
export interface TimeSequence {
  readonly group: string;
  readonly policy: string;
  readonly recordId: number;
  readonly role: 'segment' | 'progressive';
  /** When throttling began, seconds from the first packet (null: never). */
  readonly throttlingStartSec: number | null;
  readonly points: readonly { readonly timeSec: number; readonly offsetMB: number; readonly retransmission: boolean }[];
  /** Every packet of a short window in the throttling phase, where the bursts show. */
  readonly zoom: readonly { readonly timeSec: number; readonly offsetMB: number; readonly retransmission: boolean }[];
}

/** Bumped whenever RunData changes shape: runs on disk of another version are not mixed with new ones. */
export const runDataVersion = 3;

export interface RunData {
  readonly version: typeof runDataVersion;
  readonly id: string;
  readonly profile: string;
  readonly kind: 'mixed' | 'isolated';
  readonly seed: number;
  /** The group of an isolated run. */
  readonly group: string | null;
  readonly link: LinkSpec;
  /**
   * A population profile's links, one per viewer: progressive viewers first, then DASH players,
   * then browsers (each on a copy of the link of the DASH player with its index).
   */
  readonly population?: LinkPopulation | undefined;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly records: readonly FlowRecord[];
  readonly captures: readonly ResponseCaptureSummary[];
  readonly timeSequences: readonly TimeSequence[];
  readonly viewers: readonly Exclude<ViewerReport, { done: true }>[];
  readonly browsers: readonly SessionRecord[];
  /** The latency probe's replies through the bottleneck, with their times. */
  readonly probe: readonly ProbeSample[];
  readonly bottleneck: { readonly sentPackets: number; readonly drops: number };
}
