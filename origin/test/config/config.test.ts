import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { configFromEnv, loadConfig } from '../../src/config/config.js';
import { isOriginError } from '../../src/errors.js';

const configError = (pattern: RegExp) => (error: unknown) =>
  isOriginError(error, 'ORIGIN_ERR_CONFIG') && pattern.test((error as Error).message);

describe('config', () => {
  it('has documented defaults and is deeply frozen', async () => {
    const config = await loadConfig();
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.media, 'media');
    assert.equal(config.cache.revalidateMs, 1000);
    assert.ok(Object.isFrozen(config) && Object.isFrozen(config.cache));
    assert.throws(() => {
      (config as { port: number }).port = 1;
    });
  });

  it('layers file < environment < flags', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trickle-config-'));
    const file = join(dir, 'origin.yaml');
    await writeFile(file, 'port: 9000\nhost: 0.0.0.0\ncache:\n  maxBytes: 1024\n');
    const config = await loadConfig({
      file,
      env: { TRICKLE_PORT: '9100', TRICKLE_CACHE__REVALIDATE_MS: '5' },
      flags: { port: 9200, media: undefined },
    });
    assert.equal(config.port, 9200);
    assert.equal(config.host, '0.0.0.0');
    assert.equal(config.cache.maxBytes, 1024);
    assert.equal(config.cache.revalidateMs, 5);
  });

  it('maps TRICKLE_* variables to nested keys and parses JSON-looking values', () => {
    assert.deepEqual(
      configFromEnv({
        TRICKLE_LOG_LEVEL: 'debug',
        TRICKLE_CACHE__MAX_FILE_BYTES: '10',
        TRICKLE_CORS_ALLOW_ORIGIN: '["https://a.example"]',
        HOME: '/root',
      }),
      {
        logLevel: 'debug',
        cache: { maxFileBytes: 10 },
        corsAllowOrigin: ['https://a.example'],
      },
    );
    // Tools' own variables are not origin config (a guest kernel's command sees TRICKLE_NETEM_VM=1).
    assert.deepEqual(
      configFromEnv({
        TRICKLE_CHROMIUM: '/usr/bin/chromium',
        TRICKLE_TEST_MEDIA: '/tmp/m',
        TRICKLE_NETEM_VM: '1',
        TRICKLE_PORT: '9000',
      }),
      { port: 9000 },
    );
  });

  it('names the bad key, where it came from and the allowed values', async () => {
    await assert.rejects(loadConfig({ flags: { port: 70000 } }), configError(/"port" \(from command line\)/));
    await assert.rejects(
      loadConfig({ env: { TRICKLE_LOG_LEVEL: 'loud' } }),
      configError(/"logLevel" \(from environment\).*"info"/),
    );
    await assert.rejects(
      loadConfig({ env: { TRICKLE_PROT: '1' } }),
      configError(/unknown key "prot".*allowed: media, port, host/),
    );
    await assert.rejects(
      loadConfig({ env: { TRICKLE_CACHE__SIZE: '1' } }),
      configError(/unknown key "cache.size".*allowed: maxBytes, maxFileBytes, revalidateMs/),
    );
    await assert.rejects(
      loadConfig({ env: { TRICKLE_DELIVERY__ABR__PATH_HOLD__LIMITED_BELOW: '0.95' } }),
      configError(/limitedBelow must not exceed recoveredAbove/),
    );
  });

  it('reports unreadable and malformed config files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trickle-config-'));
    await assert.rejects(loadConfig({ file: join(dir, 'missing.yaml') }), configError(/cannot read config file/));
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{ port: ');
    await assert.rejects(loadConfig({ file: bad }), configError(/not valid JSON/));
    const list = join(dir, 'list.yaml');
    await writeFile(list, '- 1\n- 2\n');
    await assert.rejects(loadConfig({ file: list }), configError(/must hold an object/));
  });
});
