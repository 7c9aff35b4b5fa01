/**
 * Origin configuration: one schema, validated once at boot from defaults < config file <
 * environment (TRICKLE_*) < CLI flags, then frozen. Errors name the key, where the bad value came
 * from, and the allowed values.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { deliverySchema } from '../delivery/delivery-config.js';
import { OriginError } from '../errors.js';

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

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
  /**
   * Connections the kernel holds for the origin to accept (listen(2)'s backlog; Linux caps it at
   * net.core.somaxconn). Node's 511 overflows when thousands of viewers arrive at once: the
   * handshakes that do not fit wait seconds for SYN and SYN-ACK retries, and some are reset.
   */
  listenBacklog: z.number().int().min(1).max(65535).default(4096),
  logLevel: z.enum(logLevels).default('info'),
  /** Access-Control-Allow-Origin: `*`, one origin, or a list of origins. */
  corsAllowOrigin: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).default('*'),
  cache: z
    .strictObject({
      maxBytes: z
        .number()
        .int()
        .min(0)
        .default(512 * 1024 * 1024),
      maxFileBytes: z
        .number()
        .int()
        .min(0)
        .default(16 * 1024 * 1024),
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
  /**
   * HTTPS (HTTP/1.1 only, ALPN "http/1.1"): PEM files, re-read on SIGHUP. TLS ends in this process
   * because the clamp acts on the socket facing the viewer.
   */
  tls: z.strictObject({ cert: z.string().min(1), key: z.string().min(1) }).optional(),
  /**
   * An admin listener for /metrics, /api/flows and the probes; when set, metrics and flow records
   * (client addresses) are no longer on the public port.
   */
  admin: z
    .strictObject({ port: z.number().int().min(0).max(65535), host: z.string().min(1).default('127.0.0.1') })
    .optional(),
  /**
   * Serve /metrics and /api/flows (viewers' addresses) on the public listener although it is not
   * loopback and there is no admin listener: for a lab or a demo. Off, such a listener serves only
   * the probes, and the origin says at startup how to reach the rest.
   */
  publicOps: z.boolean().default(false),
  delivery: deliverySchema.prefault({}),
  flows: flowsSchema.prefault({}),
});

export type OriginConfig = Readonly<z.output<typeof originConfigSchema>>;
export type OriginConfigInput = z.input<typeof originConfigSchema>;

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
        return (
          `unknown key ` +
          `${issue.keys.map((k) => `"${[...issue.path, k].join('.')}"`).join(', ')} ` +
          `${where}(from ${sourceOf(layers, [...issue.path, issue.keys[0]!])}); ` +
          `allowed: ${allowedKeysAt(issue.path).join(', ')}`
        );
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
    throw new OriginError(
      'ORIGIN_ERR_CONFIG',
      `cannot read config file ${path}: ${(error as Error).message}`,
      { file: path },
      { cause: error },
    );
  }
  let parsed: unknown;
  try {
    parsed = extname(path) === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    throw new OriginError(
      'ORIGIN_ERR_CONFIG',
      `config file ${path} is not valid ${extname(path) === '.json' ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
      { file: path },
      { cause: error },
    );
  }
  if (!isPlainObject(parsed))
    throw new OriginError('ORIGIN_ERR_CONFIG', `config file ${path} must hold an object at the top level`, {
      file: path,
    });
  return parsed;
}

/** TRICKLE_* variables that configure tools rather than the origin. */
const nonConfigVariables = new Set([
  'TRICKLE_CONFIG',
  'TRICKLE_FFMPEG',
  'TRICKLE_FFPROBE',
  'TRICKLE_CHROMIUM',
  'TRICKLE_NETEM_VM',
  'TRICKLE_SHAKA_PACKAGER',
]);

/**
 * TRICKLE_PORT=9000 -> { port: 9000 }; TRICKLE_CACHE__MAX_BYTES=1 -> { cache: { maxBytes: 1 } }.
 * Tool variables (TRICKLE_FFMPEG, TRICKLE_CHROMIUM, TRICKLE_TEST_*, ...) are not config keys.
 * Values that read as JSON numbers, booleans or arrays are parsed; everything else stays a string.
 */
export function configFromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (
      !name.startsWith('TRICKLE_') ||
      raw === undefined ||
      nonConfigVariables.has(name) ||
      name.startsWith('TRICKLE_TEST_')
    )
      continue;
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
