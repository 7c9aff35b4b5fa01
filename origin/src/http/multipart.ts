/** multipart/byteranges framing (RFC 9110 14.6), computed up front so Content-Length is exact. */
import { randomBytes } from 'node:crypto';
import type { ByteRange } from './range.js';

export interface MultipartFrame {
  readonly boundary: string;
  /** Header text preceding each part's bytes. */
  readonly partHeaders: readonly Buffer[];
  readonly trailer: Buffer;
  readonly contentLength: number;
}

export function newBoundary(): string {
  return `trickle-${randomBytes(12).toString('hex')}`;
}

export function frameMultipart(
  ranges: readonly ByteRange[],
  sizeBytes: number,
  contentType: string,
  boundary: string,
): MultipartFrame {
  const partHeaders = ranges.map((range, i) =>
    Buffer.from(
      `${i === 0 ? '' : '\r\n'}--${boundary}\r\nContent-Type: ${contentType}\r\nContent-Range: ` +
        `bytes ${range.start}-${range.end}/${sizeBytes}\r\n\r\n`,
      'latin1',
    ),
  );
  const trailer = Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1');
  const contentLength =
    partHeaders.reduce((sum, header) => sum + header.length, 0) +
    ranges.reduce((sum, range) => sum + (range.end - range.start + 1), 0) +
    trailer.length;
  return { boundary, partHeaders, trailer, contentLength };
}
