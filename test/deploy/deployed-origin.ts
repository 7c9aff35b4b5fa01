/**
 * What the deploy tests (systemd unit, Kubernetes pod) do alike with the origin they start: its
 * config (the deployment's own, with what this host fixes), HTTPS requests trusting the test CA,
 * waiting for readiness, and the flow record of a progressive response.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { get } from 'node:https';
import { join } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { makeDevCertificates, type FlowRecord } from '@trickle/origin';
import { testMediaRoot } from '../helpers/media.js';

export interface DeployedConfig {
  readonly configPath: string;
  readonly ca: Buffer;
  readonly publicUrl: string;
  readonly adminUrl: string;
}

/**
 * Writes the deployment's origin.yaml into `dir` with this host's media, loopback ports `port`
 * (public, HTTPS) and `port + 1` (admin), a dev TLS pair, and no startup phase (every byte after
 * the first is throttled, so the kernel's part shows on loopback). World-readable: the origin
 * runs as nobody.
 */
export async function writeDeployedConfig(dir: string, deploymentYaml: string, port: number): Promise<DeployedConfig> {
  const certificates = await makeDevCertificates(join(dir, 'tls'), ['127.0.0.1']);
  await chmod(join(dir, 'tls'), 0o755);
  await chmod(certificates.key, 0o644);
  const config = parseYaml(deploymentYaml) as Record<string, unknown> & { delivery: Record<string, unknown> };
  Object.assign(config, {
    media: testMediaRoot(),
    host: '127.0.0.1',
    port,
    tls: { cert: certificates.cert, key: certificates.key },
    admin: { host: '127.0.0.1', port: port + 1 },
  });
  config.delivery = { ...config.delivery, startupSec: 0 };
  const configPath = join(dir, 'origin.yaml');
  await writeFile(configPath, stringifyYaml(config));
  await chmod(configPath, 0o644);
  return {
    configPath,
    ca: await readFile(certificates.caCert),
    publicUrl: `https://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${port + 1}`,
  };
}

/** An HTTPS GET trusting one CA (the deploy tests' dev certificates): status and whole body. */
export function httpsGet(
  url: string,
  ca: Buffer,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Buffer }> {
  return new Promise((done, fail) => {
    get(url, { ca, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => done({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
    }).on('error', fail);
  });
}

/**
 * Waits (up to 30 s) until /readyz says ready, failing at once if the origin exits; asserts the
 * clamp in force is the BPF one. Ready means: the index is built and the clamp is the one config demands.
 */
export async function assertReadyWithBpf(adminUrl: string, origin: ChildProcess, output: () => string): Promise<void> {
  let ready: { status: string; reasons: string[]; clamp: string } | undefined;
  for (let attempt = 0; attempt < 150 && ready?.status !== 'ready'; attempt++) {
    await new Promise((done) => setTimeout(done, 200));
    assert.equal(origin.exitCode, null, `the origin exited: ${output()}`);
    ready = await fetch(`${adminUrl}/readyz`).then(
      (response) => response.json() as Promise<typeof ready>,
      () => undefined,
    );
  }
  assert.equal(ready?.status, 'ready', `readyz: ${JSON.stringify(ready)}; ${output()}`);
  assert.equal(ready.clamp, 'bpf');
}

/** The flow record of the progressive response just served (waited for up to 5 s). */
export async function progressiveFlowRecord(adminUrl: string): Promise<FlowRecord> {
  let record: FlowRecord | undefined;
  for (let attempt = 0; attempt < 50 && record === undefined; attempt++) {
    await new Promise((done) => setTimeout(done, 100));
    record = ((await (await fetch(`${adminUrl}/api/flows`)).json()) as { flows: FlowRecord[] }).flows.find(
      (flow) => flow.role === 'progressive',
    );
  }
  assert.ok(record !== undefined, 'a flow record');
  return record;
}
