/** The /player/ page and the player libraries, served from node_modules (never from a CDN). */
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';

export interface PlayerFiles {
  readonly indexHtml: string;
  readonly playerJs: string;
  readonly dashjs: string;
  readonly hlsjs: string;
}

export async function registerPlayerRoutes(app: FastifyInstance, paths: PlayerFiles): Promise<void> {
  const files = new Map<string, { body: Buffer; type: string }>([
    ['', { body: await readFile(paths.indexHtml), type: 'text/html; charset=utf-8' }],
    ['player.js', { body: await readFile(paths.playerJs), type: 'text/javascript; charset=utf-8' }],
    ['lib/dash.all.min.js', { body: await readFile(paths.dashjs), type: 'text/javascript; charset=utf-8' }],
    ['lib/hls.min.js', { body: await readFile(paths.hlsjs), type: 'text/javascript; charset=utf-8' }],
  ]);
  app.get('/player', async (_request, reply) => reply.redirect('player/', 301));
  app.get('/player/*', async (request, reply) => {
    const file = files.get((request.params as { '*': string })['*']);
    if (file === undefined) return reply.code(404).send({ error: { code: 'ORIGIN_ERR_NOT_FOUND', message: 'no such player file' } });
    return reply.type(file.type).header('cache-control', 'no-cache').send(file.body);
  });
}
