/**
 * The demo stack's definitions as the tests read them: docker-compose.yml parsed, with Compose's
 * `${NAME:-default}` interpolation resolved (from a given environment, else the defaults), so the
 * tests run exactly what the compose file says.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';

export const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
export const composePath = join(repoRoot, 'docker-compose.yml');

export interface ComposeService {
  readonly build?: { readonly context: string; readonly dockerfile: string; readonly target?: string };
  readonly image?: string;
  readonly entrypoint?: readonly string[];
  readonly environment?: Readonly<Record<string, string>>;
  readonly networks?: Readonly<Record<string, { readonly ipv4_address?: string } | null>>;
  readonly depends_on?: Readonly<Record<string, unknown>> | readonly string[];
  readonly volumes?: readonly string[];
  readonly ports?: readonly string[];
  readonly profiles?: readonly string[];
  readonly cap_add?: readonly string[];
  readonly privileged?: boolean;
}

export interface ComposeFile {
  readonly name: string;
  readonly services: Readonly<Record<string, ComposeService>>;
  readonly networks: Readonly<
    Record<string, { readonly ipam: { readonly config: readonly { readonly subnet: string }[] } }>
  >;
  readonly volumes?: Readonly<Record<string, unknown>>;
}

export function readComposeText(): string {
  return readFileSync(composePath, 'utf8');
}

/** Compose's `${NAME}` / `${NAME:-default}` interpolation. */
export function interpolate(value: string, env: Readonly<Record<string, string | undefined>> = {}): string {
  return value.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_match, name: string, fallback: string | undefined) => env[name] || fallback || '',
  );
}

export function readCompose(): ComposeFile {
  return parseYaml(readComposeText(), { merge: true }) as ComposeFile;
}

/** A service's fixed address on one of its networks. */
export function addressOf(service: string, network: string): string {
  const address = readCompose().services[service]?.networks?.[network]?.ipv4_address;
  if (address === undefined) throw new Error(`${service} has no fixed address on ${network}`);
  return address;
}

/** A service's environment as the container would get it (interpolated with `env` or the defaults). */
export function serviceEnvironment(
  service: string,
  env: Readonly<Record<string, string | undefined>> = {},
): Record<string, string> {
  const definition = readCompose().services[service];
  if (definition === undefined) throw new Error(`docker-compose.yml has no service "${service}"`);
  return Object.fromEntries(
    Object.entries(definition.environment ?? {}).map(([name, value]) => [name, interpolate(String(value), env)]),
  );
}

/**
 * The repository file a service's entrypoint runs (the image keeps the repository at /app), or null for a packaged
 * program.
 */
export function serviceEntrypoint(service: string): string | null {
  const compose = readCompose();
  const definition = compose.services[service]!;
  const explicit = definition.entrypoint?.[0];
  if (explicit !== undefined) return join(repoRoot, explicit.replace(/^\/app\//, ''));
  const dockerfile = readFileSync(join(repoRoot, definition.build!.context, definition.build!.dockerfile), 'utf8');
  // The ENTRYPOINT of the service's build target.
  const stage = dockerfile
    .split(/^FROM /m)
    .find((part) => new RegExp(`\\bAS ${definition.build!.target}\\s`).test(`${part.split('\n')[0]!}\n`));
  const match = /^ENTRYPOINT \["([^"]+)"/m.exec(stage ?? '');
  if (match === null) throw new Error(`no ENTRYPOINT for service ${service}`);
  // A packaged program (Prometheus) is not a repository file.
  return match[1]!.startsWith('/app/') ? join(repoRoot, match[1]!.replace(/^\/app\//, '')) : null;
}

/** The document as Compose validates it: every `${NAME:-default}` resolved (with `env` or the defaults). */
export function interpolateDocument(node: unknown, env: Readonly<Record<string, string | undefined>> = {}): unknown {
  if (typeof node === 'string') return interpolate(node, env);
  if (Array.isArray(node)) return node.map((item) => interpolateDocument(item, env));
  if (node === null || typeof node !== 'object') return node;
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, interpolateDocument(value, env)]));
}
