/**
 * Validators and conditional requests (RFC 9110 sections 8.8 and 13). Pure: no I/O, no clock.
 */

export interface Validators {
  /** Strong entity tag including its quotes, e.g. `"1a2b-5f3c"`. */
  readonly etag: string;
  /** Modification time in whole seconds since the epoch (HTTP dates have second precision). */
  readonly lastModifiedSec: number;
  /** The same as an HTTP date, for Last-Modified (formatted once per file version, not per response). */
  readonly lastModified: string;
}

export interface ConditionalHeaders {
  readonly ifMatch?: string | undefined;
  readonly ifNoneMatch?: string | undefined;
  readonly ifModifiedSince?: string | undefined;
  readonly ifUnmodifiedSince?: string | undefined;
  readonly ifRange?: string | undefined;
}

/** What the preconditions decide before any Range handling. */
export type PreconditionOutcome = 'proceed' | 'not-modified' | 'precondition-failed';

/** A strong validator from size and modification time (the same inputs nginx uses). */
export function makeValidators(sizeBytes: number, mtimeMs: number): Validators {
  const lastModifiedSec = Math.floor(mtimeMs / 1000);
  return {
    etag: `"${sizeBytes.toString(16)}-${Math.floor(mtimeMs).toString(16)}"`,
    lastModifiedSec,
    lastModified: httpDate(lastModifiedSec),
  };
}

export function httpDate(epochSec: number): string {
  return new Date(epochSec * 1000).toUTCString();
}

function parseHttpDateSec(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/** Split an If-Match / If-None-Match list into entity tags; `*` is returned as is. */
function parseEntityTagList(value: string): string[] {
  const tags: string[] = [];
  const pattern = /\s*(\*|(?:W\/)?"[^"]*")\s*(?:,|$)/gy;
  for (let match = pattern.exec(value); match !== null && match[0] !== ''; match = pattern.exec(value))
    tags.push(match[1]!);
  return tags;
}

function isWeak(tag: string): boolean {
  return tag.startsWith('W/');
}

function opaque(tag: string): string {
  return isWeak(tag) ? tag.slice(2) : tag;
}

function strongMatch(a: string, b: string): boolean {
  return !isWeak(a) && !isWeak(b) && a === b;
}

function weakMatch(a: string, b: string): boolean {
  return opaque(a) === opaque(b);
}

/** RFC 9110 13.2.2: evaluate the preconditions in their defined order. */
export function evaluatePreconditions(
  method: string,
  headers: ConditionalHeaders,
  validators: Validators,
): PreconditionOutcome {
  const safe = method === 'GET' || method === 'HEAD';
  if (headers.ifMatch !== undefined) {
    const tags = parseEntityTagList(headers.ifMatch);
    const matched = tags.some((tag) => tag === '*' || strongMatch(tag, validators.etag));
    if (!matched) return 'precondition-failed';
  } else {
    const since = parseHttpDateSec(headers.ifUnmodifiedSince);
    if (since !== undefined && validators.lastModifiedSec > since) return 'precondition-failed';
  }

  if (headers.ifNoneMatch !== undefined) {
    const tags = parseEntityTagList(headers.ifNoneMatch);
    const matched = tags.some((tag) => tag === '*' || weakMatch(tag, validators.etag));
    if (matched) return safe ? 'not-modified' : 'precondition-failed';
  } else if (safe) {
    const since = parseHttpDateSec(headers.ifModifiedSince);
    if (since !== undefined && validators.lastModifiedSec <= since) return 'not-modified';
  }
  return 'proceed';
}

/**
 * RFC 9110 13.1.5: a Range is honoured only if If-Range is absent or still matches.
 * An entity tag must match strongly; a date must equal Last-Modified exactly.
 */
export function ifRangeAllowsPartial(ifRange: string | undefined, validators: Validators): boolean {
  if (ifRange === undefined) return true;
  const value = ifRange.trim();
  if (value.startsWith('"') || value.startsWith('W/')) return strongMatch(value, validators.etag);
  const since = parseHttpDateSec(value);
  return since !== undefined && since === validators.lastModifiedSec;
}
