/**
 * sendFile on an in-memory media file through fastify's inject (no sockets): answers, headers, error bodies, the
 * delivery hook.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { makeValidators } from '../../src/http/conditional.js';
import { sendFile, type SendFileOptions } from '../../src/http/send-file.js';
import type { MediaFile } from '../../src/media/library.js';
import type { ByteRange } from '../../src/http/range.js';

const body = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));
const file: MediaFile = {
  asset: 'a',
  name: 'chunk-1-00001.m4s',
  path: '/nowhere',
  sizeBytes: body.length,
  mtimeMs: 1_700_000_000_000,
  validators: makeValidators(body.length, 1_700_000_000_000),
  contentType: 'video/iso.segment',
  role: 'segment',
  body,
};

function app(deliver?: SendFileOptions['deliver']): { app: FastifyInstance; delivered: ByteRange[] } {
  const delivered: ByteRange[] = [];
  const options: SendFileOptions = {
    maxRanges: 4,
    cacheControl: { manifestMaxAgeSec: 2, segmentMaxAgeSec: 100, progressiveMaxAgeSec: 10 },
    onShortRead: () => undefined,
    readRange: (_file, range) => body.subarray(range.start, range.end + 1),
    ...(deliver === undefined
      ? {}
      : {
          deliver: (request, reply, media, range) => {
            delivered.push(range);
            return deliver(request, reply, media, range);
          },
        }),
  };
  const server = Fastify();
  server.route({
    method: ['GET', 'HEAD'],
    url: '/f',
    exposeHeadRoute: false,
    handler: (request, reply) => sendFile(request, reply, file, options),
  });
  return { app: server, delivered };
}

describe('sendFile', () => {
  it('answers GET and HEAD with validators, caching and the whole body', async () => {
    const { app: server } = app();
    const get = await server.inject({ url: '/f' });
    assert.equal(get.statusCode, 200);
    assert.deepEqual(get.rawPayload, body);
    assert.equal(get.headers.etag, file.validators.etag);
    assert.equal(get.headers['cache-control'], 'public, max-age=100, immutable');
    assert.equal(get.headers['accept-ranges'], 'bytes');
    assert.equal(get.headers['content-type'], 'video/iso.segment');
    const head = await server.inject({ method: 'HEAD', url: '/f' });
    assert.equal(head.statusCode, 200);
    assert.equal(head.headers['content-length'], '1000');
    assert.equal(head.rawPayload.length, 0);
  });

  it('answers ranges (one, several), and coded errors for what cannot be satisfied', async () => {
    const { app: server } = app();
    const one = await server.inject({ url: '/f', headers: { range: 'bytes=10-19' } });
    assert.equal(one.statusCode, 206);
    assert.equal(one.headers['content-range'], 'bytes 10-19/1000');
    assert.deepEqual(one.rawPayload, body.subarray(10, 20));
    const several = await server.inject({ url: '/f', headers: { range: 'bytes=0-1,5-6' } });
    assert.equal(several.statusCode, 206);
    assert.match(String(several.headers['content-type']), /^multipart\/byteranges; boundary=/);
    const past = await server.inject({ url: '/f', headers: { range: 'bytes=5000-' } });
    assert.equal(past.statusCode, 416);
    assert.equal(past.headers['content-range'], 'bytes */1000');
    assert.equal(past.json().error.code, 'ORIGIN_ERR_RANGE_NOT_SATISFIABLE');
  });

  it('answers conditional requests with 304 and 412 (a coded error)', async () => {
    const { app: server } = app();
    assert.equal(
      (await server.inject({ url: '/f', headers: { 'if-none-match': file.validators.etag } })).statusCode,
      304,
    );
    const failed = await server.inject({ url: '/f', headers: { 'if-match': '"other"' } });
    assert.equal(failed.statusCode, 412);
    assert.equal(failed.json().error.code, 'ORIGIN_ERR_PRECONDITION');
  });

  it('hands the range to the delivery hook, which may take it or leave it to be sent plainly', async () => {
    const taking = app((_request, reply, _media, range) => {
      void reply.send(body.subarray(range.start, range.end + 1).reverse());
      return true;
    });
    const taken = await taking.app.inject({ url: '/f', headers: { range: 'bytes=0-3' } });
    assert.deepEqual(taking.delivered, [{ start: 0, end: 3 }]);
    assert.deepEqual([...taken.rawPayload], [3, 2, 1, 0]);
    const leaving = app(() => false);
    const plain = await leaving.app.inject({ url: '/f' });
    assert.deepEqual(leaving.delivered, [{ start: 0, end: 999 }]);
    assert.deepEqual(plain.rawPayload, body);
    // HEAD and not-modified never reach the hook.
    await leaving.app.inject({ method: 'HEAD', url: '/f' });
    await leaving.app.inject({ url: '/f', headers: { 'if-none-match': file.validators.etag } });
    assert.equal(leaving.delivered.length, 1);
  });
});
