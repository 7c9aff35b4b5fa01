/** The /player/ page and the player libraries, served from node_modules (never from a CDN). */
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { errorBody, statusOf } from '../errors.js';

export interface PlayerFiles {
  readonly indexHtml: string;
  readonly playerJs: string;
  /** Undefined when the optional dependency is not installed. */
  readonly dashjs: string | undefined;
  readonly hlsjs: string | undefined;
}

export async function registerPlayerRoutes(app: FastifyInstance, paths: PlayerFiles): Promise<void> {
  const script = 'text/javascript; charset=utf-8';
  const files = new Map<string, { body: Buffer; type: string } | { missing: string }>([
    ['', { body: await readFile(paths.indexHtml), type: 'text/html; charset=utf-8' }],
    ['player.js', { body: await readFile(paths.playerJs), type: script }],
    ['lib/dash.all.min.js', paths.dashjs === undefined ? { missing: 'dashjs' } : { body: await readFile(paths.dashjs), type: script }],
    ['lib/hls.min.js', paths.hlsjs === undefined ? { missing: 'hls.js' } : { body: await readFile(paths.hlsjs), type: script }],
  ]);
  app.get('/player', async (_request, reply) => reply.redirect('player/', 301));
  app.get('/player/*', async (request, reply) => {
    const file = files.get((request.params as { '*': string })['*']);
    if (file === undefined) return reply.code(404).send(errorBody('ORIGIN_ERR_NOT_FOUND', 'no such player file'));
    if ('missing' in file) return reply.code(statusOf('ORIGIN_ERR_PLAYER_MISSING')).send(errorBody('ORIGIN_ERR_PLAYER_MISSING', `${file.missing} is not installed beside the origin (an optional dependency): npm install ${file.missing}`));
    return reply.type(file.type).header('cache-control', 'no-cache').send(file.body);
  });
}
