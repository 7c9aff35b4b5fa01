/**
 * CMCD (CTA-5004) of a request, from its query (`CMCD=`) or its headers (`CMCD-Request`, ...),
 * parsed by the SVTA common-media-library; a malformed one is ignored (the response is served as
 * if none was sent).
 */
import { fromCmcdHeaders, fromCmcdQuery, type Cmcd } from '@svta/common-media-library/cmcd';

const cmcdHeaderNames = ['cmcd-request', 'cmcd-object', 'cmcd-status', 'cmcd-session'] as const;

export function readCmcd(
  query: string | undefined,
  headers: Record<string, string | string[] | undefined>,
): Cmcd | undefined {
  const fromQuery = query === undefined ? undefined : new URLSearchParams(query).get('CMCD');
  if (fromQuery !== null && fromQuery !== undefined) {
    try {
      return fromCmcdQuery(`CMCD=${encodeURIComponent(fromQuery)}`);
    } catch {
      return undefined;
    }
  }
  // Made only when one is there: most requests of an edge carry none, and this runs for every media response.
  let cmcdHeaders: Record<string, string> | undefined;
  for (const name of cmcdHeaderNames) {
    const value = headers[name];
    if (typeof value !== 'string') continue;
    cmcdHeaders ??= {};
    cmcdHeaders[name] = value;
  }
  if (cmcdHeaders === undefined) return undefined;
  try {
    return fromCmcdHeaders(cmcdHeaders) as Cmcd;
  } catch {
    return undefined;
  }
}
