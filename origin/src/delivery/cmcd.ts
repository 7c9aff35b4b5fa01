/**
 * CMCD (CTA-5004) of a request, from its query (`CMCD=`) or its headers (`CMCD-Request`, ...),
 * parsed by the SVTA common-media-library; a malformed one is ignored (the response is served as
 * if none was sent).
 */
import { fromCmcdHeaders, fromCmcdQuery, type Cmcd } from '@svta/common-media-library/cmcd';

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
  const cmcdHeaders: Record<string, string> = {};
  for (const name of ['cmcd-request', 'cmcd-object', 'cmcd-status', 'cmcd-session']) {
    const value = headers[name];
    if (typeof value === 'string') cmcdHeaders[name] = value;
  }
  if (Object.keys(cmcdHeaders).length === 0) return undefined;
  try {
    return fromCmcdHeaders(cmcdHeaders) as Cmcd;
  } catch {
    return undefined;
  }
}
