/**
 * Answers GET/HEAD for one media file with full HTTP semantics: validators and conditional
 * requests (304/412), single and multiple byte ranges (206, multipart/byteranges), 416, caching
 * headers. Small files come from the library's memory cache; large ones are streamed from disk.
 */
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { wholeRangeMaxBytes, type MediaFile } from '../media/library.js';
import { errorBody, statusOf } from '../errors.js';
import { evaluatePreconditions, ifRangeAllowsPartial } from './conditional.js';
import { frameMultipart, newBoundary } from './multipart.js';
import { byteRangeLength, parseRange, type ByteRange } from './range.js';

export interface SendFileOptions {
  readonly maxRanges: number;
  readonly cacheControl: {
    readonly manifestMaxAgeSec: number;
    readonly segmentMaxAgeSec: number;
    readonly progressiveMaxAgeSec: number;
  };
  /** Called when a streamed file turns out shorter than its stat said (replaced or truncated). */
  readonly onShortRead: (file: MediaFile, error: Error) => void;
  /** An uncached file's range in one buffer (used for ranges up to wholeRangeMaxBytes). */
  readonly readRange: (file: MediaFile, range: ByteRange) => Buffer | Promise<Buffer>;
  /**
   * Sends a media body under a delivery policy; false when the file is not paced media (sent plainly).
   * Synchronous: an await per response was a microtask turn of every media request.
   */
  readonly deliver?: (request: FastifyRequest, reply: FastifyReply, file: MediaFile, range: ByteRange) => boolean;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

export function cacheControlFor(file: MediaFile, options: SendFileOptions['cacheControl']): string {
  switch (file.role) {
    case 'manifest':
      return `public, max-age=${options.manifestMaxAgeSec}`;
    case 'init':
    case 'segment':
      return `public, max-age=${options.segmentMaxAgeSec}, immutable`;
    default:
      return `public, max-age=${options.progressiveMaxAgeSec}`;
  }
}

/** A stream of the file's bytes in `range`, failing loudly if the file is shorter than expected. */
function rangeStream(file: MediaFile, range: ByteRange, onShortRead: SendFileOptions['onShortRead']): Readable {
  if (file.body !== undefined) return Readable.from([file.body.subarray(range.start, range.end + 1)]);
  const expected = byteRangeLength(range);
  const source = createReadStream(file.path, { start: range.start, end: range.end, highWaterMark: 256 * 1024 });
  let seen = 0;
  return Readable.from(
    (async function* () {
      for await (const chunk of source as AsyncIterable<Buffer>) {
        seen += chunk.length;
        yield chunk;
      }
      if (seen !== expected) {
        const error = new Error(`${file.path} changed while being served: read ${seen} of ${expected} bytes`);
        onShortRead(file, error);
        throw error;
      }
    })(),
    { objectMode: false },
  );
}

function multipartStream(
  file: MediaFile,
  ranges: readonly ByteRange[],
  frame: ReturnType<typeof frameMultipart>,
  onShortRead: SendFileOptions['onShortRead'],
): Readable {
  return Readable.from(
    (async function* () {
      for (const [i, range] of ranges.entries()) {
        yield frame.partHeaders[i]!;
        yield* rangeStream(file, range, onShortRead);
      }
      yield frame.trailer;
    })(),
  );
}

export async function sendFile(
  request: FastifyRequest,
  reply: FastifyReply,
  file: MediaFile,
  options: SendFileOptions,
): Promise<FastifyReply> {
  const method = request.method;
  reply.header('accept-ranges', 'bytes');
  reply.header('etag', file.validators.etag);
  reply.header('last-modified', file.validators.lastModified);
  reply.header('cache-control', cacheControlFor(file, options.cacheControl));

  const precondition = evaluatePreconditions(
    method,
    {
      ifMatch: header(request, 'if-match'),
      ifNoneMatch: header(request, 'if-none-match'),
      ifModifiedSince: header(request, 'if-modified-since'),
      ifUnmodifiedSince: header(request, 'if-unmodified-since'),
    },
    file.validators,
  );
  if (precondition === 'not-modified') return reply.code(304).send();
  if (precondition === 'precondition-failed') {
    return reply
      .code(statusOf('ORIGIN_ERR_PRECONDITION'))
      .type('application/json; charset=utf-8')
      .send(errorBody('ORIGIN_ERR_PRECONDITION', 'precondition failed'));
  }

  const rangeHeader = method === 'GET' || method === 'HEAD' ? header(request, 'range') : undefined;
  const useRange = rangeHeader !== undefined && ifRangeAllowsPartial(header(request, 'if-range'), file.validators);
  const outcome = parseRange(useRange ? rangeHeader : undefined, file.sizeBytes, options.maxRanges);

  if (outcome.kind === 'unsatisfiable') {
    return reply
      .code(statusOf('ORIGIN_ERR_RANGE_NOT_SATISFIABLE'))
      .header('content-range', `bytes */${file.sizeBytes}`)
      .type('application/json; charset=utf-8')
      .send(errorBody('ORIGIN_ERR_RANGE_NOT_SATISFIABLE', outcome.reason));
  }

  reply.type(file.contentType);
  if (outcome.kind === 'full') {
    reply.code(200).header('content-length', file.sizeBytes);
    if (method === 'HEAD') return reply.send();
    if (options.deliver?.(request, reply, file, { start: 0, end: file.sizeBytes - 1 }) === true) return reply;
    if (file.body !== undefined) return reply.send(file.body);
    return reply.send(rangeStream(file, { start: 0, end: file.sizeBytes - 1 }, options.onShortRead));
  }

  const ranges = outcome.ranges;
  if (ranges.length === 1) {
    const range = ranges[0]!;
    reply
      .code(206)
      .header('content-range', `bytes ${range.start}-${range.end}/${file.sizeBytes}`)
      .header('content-length', byteRangeLength(range));
    if (method === 'HEAD') return reply.send();
    if (options.deliver?.(request, reply, file, range) === true) return reply;
    if (file.body !== undefined) return reply.send(file.body.subarray(range.start, range.end + 1));
    if (byteRangeLength(range) <= wholeRangeMaxBytes) return reply.send(await options.readRange(file, range));
    return reply.send(rangeStream(file, range, options.onShortRead));
  }

  const frame = frameMultipart(ranges, file.sizeBytes, file.contentType, newBoundary());
  reply
    .code(206)
    .type(`multipart/byteranges; boundary=${frame.boundary}`)
    .header('content-length', frame.contentLength);
  if (method === 'HEAD') return reply.send();
  return reply.send(multipartStream(file, ranges, frame, options.onShortRead));
}
