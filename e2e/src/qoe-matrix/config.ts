/**
 * The QoE matrix's cells: links x policies x players x CMCD x where playback starts (the
 * beginning, or mid-asset as a viewer who resumes or follows a link does). Each cell is played `sessions` times,
 * each time on a fresh lab (the link belongs to the session: the paper's world is one access
 * link per viewer), with the same link draw for session i in every cell, so cells are compared
 * on identical network conditions (a paired design). A shared link (`viewers` > 1) holds that
 * many viewers at once: a browser cell's session then plays beside simulated viewers of the same
 * policy, a simulator cell counts every one of them. Pure.
 */
import { isPolicyName, policyCatalogue, type PolicyName } from '@trickle/origin/rules';
import { threeGLikeTrace } from '@trickle/player-sim';
import { E2eError } from '../errors.js';
import { symmetricLink, type LinkSpec } from '../lab/link-spec.js';
import { profileLink } from '../lab/profiles.js';

export const matrixPlayers = ['dashjs', 'hlsjs', 'shaka', 'sim'] as const;
export type MatrixPlayer = (typeof matrixPlayers)[number];

export interface MatrixLink {
  readonly name: string;
  readonly description: string;
  /** Viewers sharing the link at once. */
  readonly viewers: number;
  /** The link of session `index` (traces are drawn per session, the same draw in every cell). */
  spec(index: number): LinkSpec;
}

export const matrixLinks: Readonly<Record<string, MatrixLink>> = {
  'dsl-6mbit': {
    name: 'dsl-6mbit',
    description: '6 Mbit/s down, 1 up, 40 ms RTT, 2x BDP buffer',
    viewers: 1,
    spec: () => profileLink('dsl-6mbit'),
  },
  '3g-trace': {
    name: '3g-trace',
    description:
      '3G-like random walk around 1.2 Mbit/s (0.15-3, 1 s steps; one seeded draw per ' +
      'session), 150 ms RTT, 2x BDP of the mean',
    viewers: 1,
    spec: (index) => ({
      ...symmetricLink({ rateBps: 1.2e6, upRateBps: 0.5e6, rttMs: 150, bufferBdp: 2 }),
      trace: threeGLikeTrace(index + 1),
    }),
  },
  'fast-20mbit': {
    name: 'fast-20mbit',
    description: '20 Mbit/s down, 5 up, 20 ms RTT, 2x BDP buffer',
    viewers: 1,
    spec: () => profileLink('fast-20mbit'),
  },
  'shallow-100mbit': {
    name: 'shallow-100mbit',
    description:
      '100 Mbit/s down, 10 up, 40 ms RTT, a 50 kB buffer (0.1x BDP: a 64 kB block does ' +
      "not fit), shared by 16 viewers (the A/B experiment's shallow link)",
    viewers: 16,
    spec: () => symmetricLink({ rateBps: 100e6, upRateBps: 10e6, rttMs: 40, bufferBdp: 0.1 }),
  },
};

/** A policy of the catalogue, optionally with its connections' congestion control (`pacing@bbr`). */
export interface MatrixPolicy {
  readonly label: string;
  readonly policy: PolicyName;
  readonly congestionControl: string | undefined;
}

export function parseMatrixPolicy(text: string): MatrixPolicy {
  const [name, congestionControl] = text.split('@') as [string, string | undefined];
  if (!isPolicyName(name))
    throw new E2eError(
      'E2E_ERR_OPTIONS',
      `no policy "${name}" (in "${text}"); known: ${Object.keys(policyCatalogue).join(', ')}`,
    );
  if (congestionControl !== undefined && !/^[a-z0-9_-]{1,15}$/.test(congestionControl))
    throw new E2eError('E2E_ERR_OPTIONS', `"${text}": a congestion control name like cubic or bbr after @`);
  return { label: text, policy: name, congestionControl };
}

export interface MatrixOptions {
  readonly links: readonly string[];
  readonly policies: readonly MatrixPolicy[];
  readonly players: readonly MatrixPlayer[];
  readonly cmcd: readonly ('off' | 'on')[];
  readonly sessions: number;
  readonly sessionSeconds: number;
  /** Congestion control of the origin's connections unless a policy names its own (the paper's servers: cubic). */
  readonly congestionControl: string;
  readonly probeIntervalMs: number;
  /** The origin's startup phase, media seconds (default: the origin's, 35 s). */
  readonly startupSec?: number | undefined;
  /** Where sessions begin playback, media seconds: a cell per start (default: 0, the beginning). */
  readonly starts?: readonly number[] | undefined;
  readonly asset: string;
  readonly media: string;
  /** Let sessions end with the media when the asset is shorter than a start plus a session (a quick check, not a cell to judge). */
  readonly sessionsMayEndWithMedia?: boolean | undefined;
}

export interface MatrixCell {
  readonly id: string;
  readonly link: string;
  readonly policy: MatrixPolicy;
  readonly player: MatrixPlayer;
  readonly cmcd: boolean;
  /** Where its sessions begin playback, media seconds (0: the beginning). */
  readonly startSec: number;
}

/** One session slot of a cell: session `index` on its fresh lab. */
export interface MatrixRun {
  readonly cell: MatrixCell;
  readonly index: number;
}

/** Whether a policy's rate rule reads CMCD (for the others the client's CMCD changes nothing). */
export function readsCmcd(policy: PolicyName): boolean {
  return policyCatalogue[policy].rate === 'abr';
}

export function cellsOf(options: MatrixOptions): MatrixCell[] {
  for (const link of options.links)
    if (matrixLinks[link] === undefined)
      throw new E2eError('E2E_ERR_OPTIONS', `no matrix link "${link}"; known: ${Object.keys(matrixLinks).join(', ')}`);
  const cells: MatrixCell[] = [];
  const starts = options.starts ?? [0];
  for (const startSec of starts)
    if (!Number.isFinite(startSec) || startSec < 0)
      throw new E2eError('E2E_ERR_OPTIONS', `a start must be media seconds >= 0, not ${startSec}`);
  for (const link of options.links) {
    for (const startSec of starts) {
      for (const policy of options.policies) {
        for (const player of options.players) {
          for (const cmcd of options.cmcd) {
            // CMCD on is a cell of its own only where the rate rule reads it.
            if (cmcd === 'on' && !readsCmcd(policy.policy)) continue;
            cells.push({
              id: `${link}/${policy.label}/${player}${cmcd === 'on' ? '+cmcd' : ''}${startSec > 0 ? `@${startSec}s` : ''}`,
              link,
              policy,
              player,
              cmcd: cmcd === 'on',
              startSec,
            });
          }
        }
      }
    }
  }
  return cells;
}

/** Every session slot, session index outermost: stopping early leaves every cell with about as many sessions. */
export function runsOf(cells: readonly MatrixCell[], sessions: number): MatrixRun[] {
  const runs: MatrixRun[] = [];
  for (let index = 0; index < sessions; index++) for (const cell of cells) runs.push({ cell, index });
  return runs;
}

export function runKey(run: MatrixRun): string {
  return `${run.cell.id}#${run.index}`;
}
