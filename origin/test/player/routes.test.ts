/** The /player/ routes when an optional player library is not installed: the page, and a coded 404 for the library. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import Fastify from 'fastify';
import { playerFiles } from '../../src/plugin.js';
import { registerPlayerRoutes } from '../../src/player/routes.js';

describe('player routes', () => {
  it('serves the page without dash.js installed, and says how to install it when asked for it', async () => {
    const app = Fastify({ logger: false });
    await registerPlayerRoutes(app, { ...playerFiles(), dashjs: undefined });
    try {
      assert.equal((await app.inject({ url: '/player/' })).statusCode, 200);
      assert.equal((await app.inject({ url: '/player/lib/hls.min.js' })).statusCode, 200);
      const missing = await app.inject({ url: '/player/lib/dash.all.min.js' });
      assert.equal(missing.statusCode, 404);
      assert.deepEqual(missing.json(), {
        error: {
          code: 'ORIGIN_ERR_PLAYER_MISSING',
          message: 'dashjs is not installed beside the origin (an optional dependency): npm install dashjs',
        },
      });
    } finally {
      await app.close();
    }
  });
});
