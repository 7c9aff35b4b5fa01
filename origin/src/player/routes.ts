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
  readonly shaka: string | undefined;
  /** The live charts' script, and Vega (optional too: without it the page plays and says so). */
  readonly chartsJs: string;
  readonly vega: { readonly vega: string; readonly vegaLite: string; readonly vegaEmbed: string } | undefined;
}

/** Every file of the page by its path below /player/: a body, or the optional package it needs. */
export async function playerPageFiles(
  paths: PlayerFiles,
): Promise<Map<string, { body: Buffer; type: string } | { missing: string }>> {
  const script = 'text/javascript; charset=utf-8';
  const optional = async (path: string | undefined, name: string) =>
    path === undefined ? { missing: name } : { body: await readFile(path), type: script };
  return new Map<string, { body: Buffer; type: string } | { missing: string }>([
    ['', { body: await readFile(paths.indexHtml), type: 'text/html; charset=utf-8' }],
    ['player.js', { body: await readFile(paths.playerJs), type: script }],
    ['charts.js', { body: await readFile(paths.chartsJs), type: script }],
    ['lib/dash.all.min.js', await optional(paths.dashjs, 'dashjs')],
    ['lib/hls.min.js', await optional(paths.hlsjs, 'hls.js')],
    ['lib/shaka-player.compiled.js', await optional(paths.shaka, 'shaka-player')],
    ['lib/vega.min.js', await optional(paths.vega?.vega, 'vega vega-lite vega-embed')],
    ['lib/vega-lite.min.js', await optional(paths.vega?.vegaLite, 'vega vega-lite vega-embed')],
    ['lib/vega-embed.min.js', await optional(paths.vega?.vegaEmbed, 'vega vega-lite vega-embed')],
  ]);
}

export async function registerPlayerRoutes(app: FastifyInstance, paths: PlayerFiles): Promise<void> {
  const files = await playerPageFiles(paths);
  app.get('/player', async (_request, reply) => reply.redirect('player/', 301));
  app.get('/player/*', async (request, reply) => {
    const file = files.get((request.params as { '*': string })['*']);
    if (file === undefined) return reply.code(404).send(errorBody('ORIGIN_ERR_NOT_FOUND', 'no such player file'));
    if ('missing' in file)
      return reply
        .code(statusOf('ORIGIN_ERR_PLAYER_MISSING'))
        .send(
          errorBody(
            'ORIGIN_ERR_PLAYER_MISSING',
            `${file.missing} is not installed beside the origin (an optional dependency): npm install ${file.missing}`,
          ),
        );
    return reply.type(file.type).header('cache-control', 'no-cache').send(file.body);
  });
}
