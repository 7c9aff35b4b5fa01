/**
 * Fixes what ffmpeg's DASH muxer writes into HLS playlists for VOD: BANDWIDTH must be the peak
 * (RFC 8216 4.3.4.2), not the average ffmpeg puts there; AVERAGE-BANDWIDTH carries the average;
 * media playlists get PLAYLIST-TYPE:VOD and lose the wall-clock PROGRAM-DATE-TIME lines, which
 * mean nothing for a packaged file. Pure text in, text out.
 */

export interface VariantRates {
  /** Peak per-segment bitrate of the variant's video plus its audio, bits/s. */
  readonly peakBps: number;
  readonly averageBps: number;
  readonly frameRate: number | undefined;
}

export function rewriteMasterPlaylist(text: string, ratesByUri: ReadonlyMap<string, VariantRates>): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.startsWith('#EXT-X-STREAM-INF:')) {
      const uri = lines
        .slice(i + 1)
        .find((next) => next.trim() !== '' && !next.startsWith('#'))
        ?.trim();
      const rates = uri === undefined ? undefined : ratesByUri.get(uri);
      if (rates !== undefined) {
        let attributes = line
          .slice('#EXT-X-STREAM-INF:'.length)
          .replace(/(^|,)(AVERAGE-BANDWIDTH|FRAME-RATE)=[^,]*/g, '');
        attributes = attributes.replace(
          /(^|,)BANDWIDTH=\d+/,
          `$1BANDWIDTH=${Math.ceil(rates.peakBps)},AVERAGE-BANDWIDTH=${Math.ceil(rates.averageBps)}`,
        );
        if (rates.frameRate !== undefined) attributes += `,FRAME-RATE=${rates.frameRate.toFixed(3)}`;
        out.push(`#EXT-X-STREAM-INF:${attributes.replace(/^,/, '')}`);
        continue;
      }
    }
    out.push(line);
    if (line.startsWith('#EXT-X-VERSION') && !text.includes('#EXT-X-INDEPENDENT-SEGMENTS'))
      out.push('#EXT-X-INDEPENDENT-SEGMENTS');
  }
  return out.join('\n');
}

export function rewriteMediaPlaylist(text: string): string {
  const lines = text.split('\n').filter((line) => !line.startsWith('#EXT-X-PROGRAM-DATE-TIME'));
  if (!lines.some((line) => line.startsWith('#EXT-X-PLAYLIST-TYPE'))) {
    const at = lines.findIndex((line) => line.startsWith('#EXT-X-TARGETDURATION'));
    lines.splice(at < 0 ? 1 : at + 1, 0, '#EXT-X-PLAYLIST-TYPE:VOD');
  }
  return lines.join('\n');
}
