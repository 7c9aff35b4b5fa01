/**
 * An experiment's configuration (YAML or JSON), validated once with zod and frozen: the paper's
 * A/B method (groups of connections assigned at random by the origin, two identical baselines as
 * the A/A control) over lab link profiles, with the load, session length, seeds and transport
 * settings. `docs`: the README's "Experiments" section and experiments/*.yaml.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { policyNames } from '@trickle/origin';
import { E2eError } from '../errors.js';
import { parseDurationMs, parseRate, symmetricLink, type LinkSpec } from '../lab/link-spec.js';
import { profileLink, profiles } from '../lab/profiles.js';
import { linkDistributions } from '../lab/population.js';

const rate = z.union([z.number().positive(), z.string()]).transform((value, context) => {
  try {
    return typeof value === 'number' ? value : parseRate(value);
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

const duration = z.union([z.number().min(0), z.string()]).transform((value, context) => {
  try {
    return typeof value === 'number' ? value : parseDurationMs(value);
  } catch (error) {
    context.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

const transportSchema = z.strictObject({
  /** TCP congestion control of the origin's connections (cubic, as the paper's servers ran; bbr, reno). */
  congestionControl: z
    .string()
    .regex(/^[a-z0-9_-]{1,15}$/)
    .optional(),
  /** Initial window of new connections, packets (needs the bpf clamp backend). */
  initialWindowPackets: z.number().int().min(1).max(1024).optional(),
});

const groupSchema = transportSchema.extend({
  name: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, 'letters, digits, - and _'),
  policy: z.enum(policyNames),
  weight: z.number().positive().default(1),
});

/** A lab profile by name, or a link: rate and RTT (and optionally uplink rate, buffer, random loss). */
const linkSchema = z
  .strictObject({
    profile: z
      .string()
      .refine((name) => name in profiles, `not a lab profile; known: ${Object.keys(profiles).join(', ')}`)
      .optional(),
    rate: rate.optional(),
    upRate: rate.optional(),
    rtt: duration.optional(),
    /** Bottleneck buffer in multiples of the downlink's BDP (tail drop). */
    bufferBdp: z.number().positive().max(100).optional(),
    loss: z.number().min(0).max(0.5).optional(),
  })
  .superRefine((link, context) => {
    const custom = [link.rate, link.upRate, link.rtt, link.bufferBdp, link.loss].some((v) => v !== undefined);
    if (link.profile !== undefined && custom)
      context.addIssue({ code: 'custom', message: 'give a lab profile or rate and rtt, not both' });
    if (link.profile === undefined && (link.rate === undefined || link.rtt === undefined))
      context.addIssue({
        code: 'custom',
        message: 'give a lab profile ({ profile: dsl-6mbit }) or at least rate and rtt',
      });
  });

/**
 * A population of access links, one per viewer (population.ts): drawn from a named distribution
 * (fitted to the paper's data centres) or read from a CSV of rate,rtt,buffer[,loss] rows. Each run
 * draws its own population (seeded by this seed and the run's), so more runs meet more links.
 */
const populationSchema = z
  .strictObject({
    distribution: z
      .string()
      .refine(
        (name) => name in linkDistributions,
        `not a link distribution; known: ${Object.keys(linkDistributions).join(', ')}`,
      )
      .optional(),
    /** A CSV file (relative to the working directory) with a row per viewer, in viewer order. */
    csv: z.string().min(1).optional(),
    seed: z.number().int().min(0).max(0xffff).default(1),
    /** The origin's uplink, shared by every viewer (default 1 Gbit/s: not the bottleneck, as in the paper). */
    uplinkRate: rate.optional(),
  })
  .superRefine((population, context) => {
    if ((population.distribution === undefined) === (population.csv === undefined))
      context.addIssue({ code: 'custom', message: 'give a distribution or a csv file, one of them' });
  });

const loadSchema = z.strictObject({
  /** Concurrent progressive-download viewers (the paper's YouTube flows): one GET of the MP4 each. */
  progressive: z.number().int().min(0).max(200).default(0),
  /** Concurrent simulated DASH players (player-sim live: ABR, buffer, CMCD), one connection each. */
  dash: z.number().int().min(0).max(500).default(0),
  /** Browser sessions (dash.js in Chromium) per run; their connections mix groups, so their QoE is reported per run. */
  browsers: z.number().int().min(0).max(8).default(0),
  /** Viewers start at random times (seeded) within this many seconds of the run's start. */
  startSpreadSeconds: z.number().min(0).max(600).default(5),
  abr: z.enum(['throughput', 'bola', 'bba', 'dynamic']).default('dynamic'),
  /** DASH players send CMCD (the cmcd policy needs it). */
  cmcd: z.boolean().default(true),
  maxBufferSeconds: z.number().positive().max(600).default(30),
  /** Bulk TCP flows origin -> cross host sharing the bottleneck for the whole run. */
  crossTrafficFlows: z.number().int().min(0).max(16).default(0),
  /** Ping from the cross host through the bottleneck (queueing delay), every probeIntervalMs; 0: off. */
  probeIntervalMs: z.number().int().min(0).max(10_000).default(100),
});

const experimentSchema = z
  .strictObject({
    name: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
    description: z.string().default(''),
    asset: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/)
      .default('demo'),
    /** The origin's media directory (relative to the working directory). */
    media: z.string().min(1).default('media'),
    /**
     * Made before the first run when the asset is missing: `trickle package` of another asset's
     * progressive MP4 with this ladder (e.g. a low-rate copy of the demo at the paper's ~700 kbit/s).
     */
    prepareAsset: z.strictObject({ from: z.string().regex(/^[A-Za-z0-9_-]+$/), ladder: z.string().min(1) }).optional(),
    sessionSeconds: z.number().positive().max(3600),
    /** Media seconds sent at full speed before throttling (the paper: 30-40 s). */
    startupSeconds: z.number().min(0).max(3600).default(35),
    /**
     * One mixed run per profile per seed: seeds the origin's A/B draw, viewer start times and the link's random loss.
     */
    seeds: z.array(z.number().int().min(0).max(0xffffffff)).min(1),
    groups: z
      .array(groupSchema)
      .min(2)
      .refine((groups) => new Set(groups.map((g) => g.name)).size === groups.length, 'group names must be distinct'),
    /** The group improvements are measured against (default: the first). */
    baseline: z.string().optional(),
    /** The A/A control: two groups with identical settings, expected to agree within their intervals. */
    control: z.tuple([z.string(), z.string()]).optional(),
    transport: transportSchema
      .extend({
        /** net.ipv4.tcp_slow_start_after_idle in the origin's namespace. */
        slowStartAfterIdle: z.boolean().default(true),
      })
      .prefault({}),
    profiles: z
      .array(
        z.strictObject({
          name: z.string().regex(/^[A-Za-z0-9_-]{1,32}$/),
          description: z.string().default(''),
          /** One link shared by every viewer ... */
          link: linkSchema.optional(),
          /** ... or one link per viewer: progressive, DASH and browser viewers each on their own. */
          population: populationSchema.optional(),
          /**
           * A shared link's profile standing for the same viewers as the population profile named here, on one
           * bottleneck: the naive A/B design beside the unbiased one (Spang et al., IMC 2021). The report sets each
           * effect from the two side by side.
           */
          sharedBottleneckOf: z.string().optional(),
          /** This profile's seeds and isolated runs, when they differ from the experiment's. */
          seeds: z.array(z.number().int().min(0).max(0xffffffff)).min(1).optional(),
          isolatedRuns: z.boolean().optional(),
        }),
      )
      .min(1),
    load: loadSchema.prefault({}),
    /**
     * Also one run per distinct group alone per profile (first seed): per-policy queueing delay and bursts without the
     * other groups' traffic.
     */
    isolatedRuns: z.boolean().default(false),
    /** Bootstrap resamples for the confidence intervals (95 %). */
    bootstrapResamples: z.number().int().min(100).max(100_000).default(2000),
  })
  .superRefine((config, context) => {
    const names = config.groups.map((g) => g.name);
    if (config.baseline !== undefined && !names.includes(config.baseline))
      context.addIssue({ code: 'custom', path: ['baseline'], message: `no group "${config.baseline}"` });
    for (const name of config.control ?? [])
      if (!names.includes(name)) context.addIssue({ code: 'custom', path: ['control'], message: `no group "${name}"` });
    if (config.load.progressive + config.load.dash + config.load.browsers === 0)
      context.addIssue({
        code: 'custom',
        path: ['load'],
        message: 'no viewers: give load.progressive, load.dash or load.browsers',
      });
    if (new Set(config.profiles.map((p) => p.name)).size !== config.profiles.length)
      context.addIssue({ code: 'custom', path: ['profiles'], message: 'profile names must be distinct' });
    for (const [index, profile] of config.profiles.entries()) {
      if ((profile.link === undefined) === (profile.population === undefined))
        context.addIssue({
          code: 'custom',
          path: ['profiles', index],
          message: 'give a link (one shared by all viewers) or a population (one per viewer), one of them',
        });
      if (profile.sharedBottleneckOf !== undefined) {
        const counterpart = config.profiles.find((p) => p.name === profile.sharedBottleneckOf);
        if (profile.link === undefined || counterpart?.population === undefined)
          context.addIssue({
            code: 'custom',
            path: ['profiles', index, 'sharedBottleneckOf'],
            message: 'a shared link (this profile) can stand for a population profile (the one named): give both',
          });
      }
      if (profile.population !== undefined && config.load.crossTrafficFlows > 0)
        context.addIssue({
          code: 'custom',
          path: ['profiles', index, 'population'],
          message: 'a population has no shared bottleneck for cross traffic: set load.crossTrafficFlows to 0',
        });
      if (profile.population !== undefined && config.load.browsers > config.load.dash)
        context.addIssue({
          code: 'custom',
          path: ['load', 'browsers'],
          message:
            "in a population each browser shares its link's draw with a simulated DASH player: " +
            'give at least as many load.dash as load.browsers',
        });
    }
  });

export type ExperimentConfig = z.output<typeof experimentSchema>;
export type ExperimentGroup = ExperimentConfig['groups'][number];
export type ExperimentProfile = ExperimentConfig['profiles'][number];
export type ExperimentLink = NonNullable<ExperimentProfile['link']>;
export type ExperimentPopulation = NonNullable<ExperimentProfile['population']>;

export function linkOf(link: ExperimentLink, seed: number): LinkSpec {
  if (link.profile !== undefined) return { ...profileLink(link.profile), seed };
  return symmetricLink({
    rateBps: link.rate!,
    upRateBps: link.upRate,
    rttMs: link.rtt!,
    bufferBdp: link.bufferBdp,
    lossRate: link.loss,
    seed,
  });
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

export function parseExperimentConfig(input: unknown, source = 'the experiment config'): ExperimentConfig {
  const parsed = experimentSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((issue) => `  ${issue.path.length === 0 ? '(top level)' : issue.path.join('.')}: ${issue.message}`)
      .join('\n');
    throw new E2eError('E2E_ERR_EXPERIMENT_CONFIG', `${source} is not valid:\n${problems}`);
  }
  return deepFreeze(parsed.data);
}

export async function loadExperimentConfig(path: string): Promise<ExperimentConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new E2eError('E2E_ERR_EXPERIMENT_CONFIG', `cannot read ${path}: ${(error as Error).message}`);
  }
  let input: unknown;
  try {
    input = parseYaml(text);
  } catch (error) {
    throw new E2eError('E2E_ERR_EXPERIMENT_CONFIG', `${path} is not valid YAML: ${(error as Error).message}`);
  }
  return parseExperimentConfig(input, path);
}
