/**
 * HTTP Range parsing (RFC 9110 section 14). Pure: no I/O, no clock.
 *
 * Policy, documented in the README:
 * - no header, or a unit other than `bytes`: the whole representation (the RFC's MUST ignore);
 * - a `bytes=` header whose range-set is malformed: 416 with an error naming the problem
 *   (a malformed set is a client bug, and a clear answer beats silently sending the whole file);
 * - satisfiable ranges are clamped to the representation; unsatisfiable members are dropped;
 *   if none is left: 416 with `Content-Range: bytes * /<len>`;
 * - overlapping or adjacent ranges are coalesced; more than `maxRanges` members: the Range
 *   header is ignored and the whole representation is sent (RFC 9110 14.2 lets a server do so
 *   to defend against abusive range sets).
 */

/** An inclusive byte span, as in `Content-Range: bytes start-end/len`. */
export interface ByteRange {
  readonly start: number;
  readonly end: number;
}

export type RangeOutcome =
  | { readonly kind: 'full'; readonly reason: 'no-range' | 'other-unit' | 'too-many-ranges' }
  | { readonly kind: 'partial'; readonly ranges: readonly ByteRange[] }
  | { readonly kind: 'unsatisfiable'; readonly reason: string };

export const defaultMaxRanges = 16;

const rangeSpecPattern = /^(\d*)-(\d*)$/;

function parsePosition(digits: string): number {
  const value = Number(digits);
  // Positions beyond 2^53 cannot name a byte of any file we serve: treat them as "past the end".
  return Number.isSafeInteger(value) ? value : Number.POSITIVE_INFINITY;
}

export function byteRangeLength(range: ByteRange): number {
  return range.end - range.start + 1;
}

export function parseRange(
  header: string | undefined,
  sizeBytes: number,
  maxRanges: number = defaultMaxRanges,
): RangeOutcome {
  if (header === undefined) return { kind: 'full', reason: 'no-range' };
  const equals = header.indexOf('=');
  if (equals < 0) return { kind: 'unsatisfiable', reason: 'Range header has no "=": expected bytes=<first>-<last>' };
  const unit = header.slice(0, equals).trim().toLowerCase();
  if (unit !== 'bytes') return { kind: 'full', reason: 'other-unit' };

  const members = header.slice(equals + 1).split(',');
  if (members.length > maxRanges) return { kind: 'full', reason: 'too-many-ranges' };

  const satisfiable: ByteRange[] = [];
  let sawMember = false;
  for (const raw of members) {
    const spec = raw.trim();
    // RFC 9110 list syntax tolerates empty elements ("bytes=0-1,,2-3").
    if (spec === '') continue;
    sawMember = true;
    const match = rangeSpecPattern.exec(spec);
    if (match === null) return { kind: 'unsatisfiable', reason: `malformed range "${spec}"` };
    const firstDigits = match[1] ?? '';
    const lastDigits = match[2] ?? '';
    if (firstDigits === '' && lastDigits === '')
      return { kind: 'unsatisfiable', reason: 'range "-" has neither first nor last position' };

    if (firstDigits === '') {
      const suffixLength = parsePosition(lastDigits);
      if (suffixLength === 0 || sizeBytes === 0) continue;
      satisfiable.push({ start: Math.max(0, sizeBytes - suffixLength), end: sizeBytes - 1 });
      continue;
    }
    const first = parsePosition(firstDigits);
    const last = lastDigits === '' ? Number.POSITIVE_INFINITY : parsePosition(lastDigits);
    if (last < first) return { kind: 'unsatisfiable', reason: `range "${spec}" ends before it starts` };
    if (first >= sizeBytes) continue;
    satisfiable.push({ start: first, end: Math.min(last, sizeBytes - 1) });
  }

  if (!sawMember) return { kind: 'unsatisfiable', reason: 'empty range set' };
  if (satisfiable.length === 0)
    return { kind: 'unsatisfiable', reason: `no range overlaps the ${sizeBytes} bytes of the representation` };
  return { kind: 'partial', ranges: coalesce(satisfiable) };
}

/** Merge overlapping or adjacent ranges; keeps the client's order when nothing overlaps. */
function coalesce(ranges: ByteRange[]): ByteRange[] {
  if (ranges.length < 2) return ranges;
  const sorted = [...ranges].sort((a, b) => a.start - b.start);
  let overlaps = false;
  for (let i = 1; i < sorted.length; i++) {
    if (sorted[i]!.start <= sorted[i - 1]!.end + 1) {
      overlaps = true;
      break;
    }
  }
  if (!overlaps) return ranges;
  const merged: ByteRange[] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && range.start <= last.end + 1) {
      merged[merged.length - 1] = { start: last.start, end: Math.max(last.end, range.end) };
    } else {
      merged.push(range);
    }
  }
  return merged;
}
