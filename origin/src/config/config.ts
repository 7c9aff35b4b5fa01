/**
 * Origin configuration: one schema, validated once at boot from defaults < config file <
 * environment (TRICKLE_*) < CLI flags, then frozen. Errors name the key, where the bad value came
 * from, and the allowed values.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { parseAbSpec } from '../delivery/ab.js';
import { OriginError } from '../errors.js';

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export const policyNames = ['bulk', 'app-pacing', 'app-pacing-16k', 'trickle', 'pacing', 'cmcd'] as const;
export type PolicyName = (typeof policyNames)[number];

const headroom = z.number().min(1).max(10);
const blockBytes = z.number().int().min(1024).max(16 * 1024 * 1024);

/** Transport settings applied to each new connection (globally, or per A/B group). */
const transportSchema = z.strictObject({
  /** TCP congestion control, any algorithm the kernel offers (bbr, cubic, reno, ...). */
  congestionControl: z.string().regex(/^[a-z0-9_-]{1,15}$/, 'a kernel congestion control name like cubic, bbr, reno').optional(),
  /** Initial congestion window of new connections, packets (TCP_BPF_IW through the BPF program: needs the bpf clamp backend). Unset: the kernel's. */
  initialWindowPackets: z.number().int().min(1).max(1024).optional(),
});

const abGroupSchema = transportSchema.extend({
  name: z.string().regex(/^[A-Za-z0-9_-]+$/),
  policy: z.enum(policyNames),
  weight: z.number().positive(),
});

export type AbGroupConfig = z.output<typeof abGroupSchema>;

const deliverySchema = z.strictObject({
  /** The policy used when no rule, A/B group or allowed override picks another. */
  policy: z.enum(policyNames).default('trickle'),
  /** First match wins: per asset and/or per role (segment, progressive). */
  rules: z.array(z.strictObject({ asset: z.string().min(1).optional(), role: z.enum(['segment', 'progressive']).optional(), policy: z.enum(policyNames) })).default([]),
  /** Let `?policy=<name>` pick the policy of a request (for experiments). */
  allowPolicyOverride: z.boolean().default(false),
  /** A/B groups: "bulk:25,trickle:75" (name=policy:weight for A/A controls) or a list of groups with transport settings. */
  ab: z
    .union([
      z.string().transform((spec, context) => {
        try {
          return parseAbSpec(spec, policyNames) as AbGroupConfig[];
        } catch (error) {
          context.addIssue({ code: 'custom', message: (error as Error).message });
          return z.NEVER;
        }
      }),
      z
        .array(abGroupSchema)
        .min(1)
        .refine((groups) => new Set(groups.map((g) => g.name)).size === groups.length, 'A/B group names must be distinct'),
    ])
    .optional(),
  /** Seed of the A/B assignment (Mersenne Twister): same seed, same sequence of groups. */
  abSeed: z.number().int().min(0).max(0xffffffff).default(1),
  /** Media seconds from the start of a response (or of the presentation, for segments) sent at full speed. */
  startupSec: z.number().min(0).max(3600).default(35),
  /** Progressive MP4: the media window a block's target rate is averaged over (about one GOP). */
  rateWindowSec: z.number().positive().max(60).default(2),
  clamp: z
    .strictObject({
      /** The backend wanted for trickle's clamp; weaker ones are used (and named in records) when it cannot be. */
      backend: z.enum(['bpf', 'pacing-rate', 'none']).default('bpf'),
      cgroup: z.string().min(1).default('trickle'),
      pinDir: z.string().min(1).default('/run/trickle/bpf'),
    })
    .prefault({}),
  appPacing: z.strictObject({ headroom: headroom.default(1.25), blockBytes: blockBytes.default(65_536) }).prefault({}),
  appPacing16k: z.strictObject({ headroom: headroom.default(1.25), blockBytes: blockBytes.default(16_384) }).prefault({}),
  trickle: z
    .strictObject({
      /** Clamp headroom over R (the paper: 1.2; 1.05 worked as well). */
      gain: headroom.default(1.2),
      floorPackets: z.number().int().min(1).max(1000).default(10),
      blockBytes: blockBytes.default(65_536),
      /** Goodput is judged only after this many RTTs of throttling (acknowledgements lag one RTT behind writes). */
      goodputGraceRtts: z.number().min(0).max(1000).default(10),
      /** How the clamp is lifted for catch-up and at the end of a response. */
      release: z.enum(['gradual', 'immediate']).default('gradual'),
    })
    .prefault({}),
  pacing: z.strictObject({ headroom: headroom.default(1.25), blockBytes: blockBytes.default(65_536) }).prefault({}),
  /** What the pacing and cmcd policies share (kernel-pacer.ts). */
  kernelPacing: z
    .strictObject({
      /** Below this many packets per srtt the kernel paces at the floor and writes are throttled at the rate. */
      floorPackets: z.number().int().min(1).max(1000).default(10),
    })
    .prefault({}),
  cmcd: z
    .strictObject({
      multiplierAtEmpty: headroom.default(3),
      multiplierAtFull: headroom.default(1.5),
      fullBufferMs: z.number().int().positive().default(30_000),
      lowBufferMs: z.number().int().min(0).default(5_000),
      blockBytes: blockBytes.default(65_536),
    })
    .prefault({}),
  transport: transportSchema.prefault({}),
});

const flowsSchema = z.strictObject({
  /** Per-response flow records as JSON lines: "none", "stdout", or a file path (appended). */
  log: z.string().min(1).default('none'),
  /** How many recent records GET /api/flows can return. */
  keep: z.number().int().min(0).max(1_000_000).default(10_000),
  /** After the last byte is written, wait up to this long for it to be acknowledged before the record is closed. */
  drainTimeoutMs: z.number().int().min(0).max(60_000).default(3_000),
});

export const originConfigSchema = z.strictObject({
  /** Directory whose subdirectories are assets. */
  media: z.string().min(1).default('media'),
  port: z.number().int().min(0).max(65535).default(8080),
  host: z.string().min(1).default('127.0.0.1'),
  logLevel: z.enum(logLevels).default('info'),
  /** Access-Control-Allow-Origin: `*`, one origin, or a list of origins. */
  corsAllowOrigin: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).default('*'),
  cache: z
    .strictObject({
      maxBytes: z.number().int().min(0).default(512 * 1024 * 1024),
      maxFileBytes: z.number().int().min(0).default(16 * 1024 * 1024),
      revalidateMs: z.number().int().min(0).default(1000),
    })
    .default({ maxBytes: 512 * 1024 * 1024, maxFileBytes: 16 * 1024 * 1024, revalidateMs: 1000 }),
  cacheControl: z
    .strictObject({
      manifestMaxAgeSec: z.number().int().min(0).default(2),
      segmentMaxAgeSec: z.number().int().min(0).default(31_536_000),
      progressiveMaxAgeSec: z.number().int().min(0).default(86_400),
    })
    .default({ manifestMaxAgeSec: 2, segmentMaxAgeSec: 31_536_000, progressiveMaxAgeSec: 86_400 }),
  /** Range sets with more members than this are ignored (whole representation sent). */
  maxRanges: z.number().int().min(1).max(1000).default(16),
  /** After SIGTERM, in-flight responses get this long before connections are closed. */
  shutdownGraceMs: z.number().int().min(0).default(10_000),
  delivery: deliverySchema.prefault({}),
  flows: flowsSchema.prefault({}),
});

export type OriginConfig = Readonly<z.output<typeof originConfigSchema>>;
export type OriginConfigInput = z.input<typeof originConfigSchema>;
export type DeliveryConfig = OriginConfig['delivery'];

type Layer = { readonly label: string; readonly values: Record<string, unknown> };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const existing = merged[key];
    merged[key] = isPlainObject(existing) && isPlainObject(value) ? deepMerge(existing, value) : value;
  }
  return merged;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/** Which layer last set a dotted key, for error messages. */
function sourceOf(layers: readonly Layer[], path: readonly PropertyKey[]): string {
  for (let i = layers.length - 1; i >= 0; i--) {
    let node: unknown = layers[i]!.values;
    for (const key of path) node = isPlainObject(node) ? node[String(key)] : undefined;
    if (node !== undefined) return layers[i]!.label;
  }
  return 'defaults';
}

function allowedKeysAt(path: readonly PropertyKey[]): string[] {
  let schema: z.ZodType = originConfigSchema;
  for (const key of path) {
    const inner = unwrap(schema);
    if (!(inner instanceof z.ZodObject)) return [];
    schema = (inner.shape as Record<string, z.ZodType>)[String(key)]!;
  }
  const inner = unwrap(schema);
  return inner instanceof z.ZodObject ? Object.keys(inner.shape) : [];
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current: z.ZodType = schema;
  while (current instanceof z.ZodDefault || current instanceof z.ZodOptional) current = current.unwrap() as z.ZodType;
  return current;
}

export function resolveConfig(layers: readonly Layer[]): OriginConfig {
  const merged = layers.reduce<Record<string, unknown>>((acc, layer) => deepMerge(acc, layer.values), {});
  const result = originConfigSchema.safeParse(merged);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      if (issue.code === 'unrecognized_keys') {
        const where = issue.path.length > 0 ? `in "${issue.path.join('.')}" ` : '';
        return `unknown key ${issue.keys.map((k) => `"${[...issue.path, k].join('.')}"`).join(', ')} ${where}(from ${sourceOf(layers, [...issue.path, issue.keys[0]!])}); allowed: ${allowedKeysAt(issue.path).join(', ')}`;
      }
      const key = issue.path.join('.');
      return `"${key}" (from ${sourceOf(layers, issue.path)}): ${issue.message}`;
    });
    throw new OriginError('ORIGIN_ERR_CONFIG', `invalid configuration:\n  ${problems.join('\n  ')}`, { problems });
  }
  return deepFreeze(result.data);
}

export async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new OriginError('ORIGIN_ERR_CONFIG', `cannot read config file ${path}: ${(error as Error).message}`, { file: path }, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new OriginError('ORIGIN_ERR_CONFIG', `config file ${path} is not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(error as Error).message}`, { file: path }, { cause: error });
  }
  if (!isPlainObject(parsed)) throw new OriginError('ORIGIN_ERR_CONFIG', `config file ${path} must hold an object at the top level`, { file: path });
  return parsed;
}

/** TRICKLE_* variables that configure tools rather than the origin. */
const nonConfigVariables = new Set(['TRICKLE_CONFIG', 'TRICKLE_FFMPEG', 'TRICKLE_FFPROBE', 'TRICKLE_CHROMIUM']);

/**
 * TRICKLE_PORT=9000 -> { port: 9000 }; TRICKLE_CACHE__MAX_BYTES=1 -> { cache: { maxBytes: 1 } }.
 * Tool variables (TRICKLE_FFMPEG, TRICKLE_CHROMIUM, TRICKLE_TEST_*, ...) are not config keys.
 * Values that read as JSON numbers, booleans or arrays are parsed; everything else stays a string.
 */
export function configFromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('TRICKLE_') || raw === undefined || nonConfigVariables.has(name) || name.startsWith('TRICKLE_TEST_')) continue;
    const path = name
      .slice('TRICKLE_'.length)
      .split('__')
      .map((part) => part.toLowerCase().replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()));
    let value: unknown = raw;
    if (/^-?\d+(\.\d+)?$|^(true|false)$|^\[.*\]$/.test(raw.trim())) {
      try {
        value = JSON.parse(raw);
      } catch {
        value = raw;
      }
    }
    let node = values;
    path.slice(0, -1).forEach((key) => {
      node[key] = isPlainObject(node[key]) ? node[key] : {};
      node = node[key] as Record<string, unknown>;
    });
    node[path[path.length - 1]!] = value;
  }
  return values;
}

export interface ConfigSources {
  readonly file?: string | undefined;
  readonly env?: NodeJS.ProcessEnv;
  readonly flags?: Record<string, unknown>;
}

/** Loads, merges and validates the configuration once; the result is deeply frozen. */
export async function loadConfig(sources: ConfigSources = {}): Promise<OriginConfig> {
  const env = sources.env ?? {};
  const layers: Layer[] = [];
  const file = sources.file ?? env.TRICKLE_CONFIG;
  if (file !== undefined) layers.push({ label: `config file ${file}`, values: await readConfigFile(file) });
  layers.push({ label: 'environment', values: configFromEnv(env) });
  layers.push({ label: 'command line', values: sources.flags ?? {} });
  return resolveConfig(layers);
}
