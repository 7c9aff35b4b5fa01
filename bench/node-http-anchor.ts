/**
 * The ceiling any Node origin has on this machine: node:http alone serving the same bytes from
 * memory (whole files and single ranges), no framework, no policy, no flow record. The origin's
 * benchmark measures it beside the origin and nginx, so a slow machine for Node (its syscalls,
 * its HTTP layer) is told apart from the origin's own cost.
 * `node node-http-anchor.js <media root> <port>`: serves <media root>/<path> at /media/<path>.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';

const [root, port] = process.argv.slice(2);
if (root === undefined || port === undefined) throw new Error('usage: node-http-anchor.js <media root> <port>');
const files = new Map<string, Buffer>();

createServer((request, response) => {
  const path = (request.url ?? '/').split('?')[0]!;
  let body = files.get(path);
  if (body === undefined) {
    if (!path.startsWith('/media/') || path.includes('..')) {
      response.writeHead(404).end();
      return;
    }
    try {
      body = readFileSync(join(root, path.slice('/media/'.length)));
    } catch {
      response.writeHead(404).end();
      return;
    }
    files.set(path, body);
  }
  const range = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? '');
  if (range === null) {
    response.writeHead(200, { 'content-length': body.length }).end(body);
    return;
  }
  const start = Number(range[1]);
  const end = Math.min(Number(range[2]), body.length - 1);
  response
    .writeHead(206, { 'content-range': `bytes ${start}-${end}/${body.length}`, 'content-length': end - start + 1 })
    .end(body.subarray(start, end + 1));
}).listen(Number(port), '127.0.0.1');
