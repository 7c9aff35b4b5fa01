/**
 * deploy/kubernetes/trickle.yaml: every object valid against the Kubernetes API schemas
 * (kubernetes-models' validators, generated from the API's OpenAPI documents), its parts wired to
 * each other and to the origin's own config schema; then, as root, the pod run as a kubelet would
 * run it (no cluster here): the init container's command as root against a pod cgroup laid out as
 * kubelet lays it out and a per-pod directory of a node bpffs bind-mounted as subPathExpr mounts
 * it, and the origin container's command as uid 10002's stand-in (nobody) in a child cgroup of the
 * pod's, inside its own cgroup and mount namespaces with cgroup2 at /sys/fs/cgroup, as a container
 * sees it. The origin must report the BPF clamp ready and run a paced response's throttled phase
 * in the kernel: the program attached to the pod's cgroup acts on the container's sockets.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Service } from 'kubernetes-models/v1/Service';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { parseAllDocuments, parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { findCgroup2Mount, teardownClamp } from '@trickle/native';
import { kernelPhaseOf, loadConfig, makeDevCertificates } from '@trickle/origin';
import { assertReadyWithBpf, httpsGet, progressiveFlowRecord, writeDeployedConfig } from './deployed-origin.js';
import { testMediaRoot } from '../helpers/media.js';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
const manifestPath = join(repoRoot, 'deploy', 'kubernetes', 'trickle.yaml');

interface Container {
  name: string;
  command: string[];
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports?: { name: string; containerPort: number }[];
  securityContext: {
    runAsUser?: number;
    runAsNonRoot?: boolean;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[]; add?: string[] };
    seccompProfile?: { type: string };
  };
  volumeMounts: { name: string; mountPath: string; subPathExpr?: string; readOnly?: boolean }[];
  readinessProbe?: { httpGet: { path: string; port: string } };
  livenessProbe?: { httpGet: { path: string; port: string } };
}
interface Manifest {
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
  spec: {
    template: {
      metadata: { annotations: Record<string, string> };
      spec: {
        initContainers: Container[];
        containers: Container[];
        volumes: { name: string; hostPath?: { path: string } }[];
      };
    };
    ports?: { targetPort: string }[];
    selector?: Record<string, string>;
  };
}

const models: Record<string, new (data: never) => { validate(): void }> = { Namespace, ConfigMap, Service, Deployment };

function readManifests(text: string): Manifest[] {
  return parseAllDocuments(text).map((document) => document.toJS() as Manifest);
}

function validate(manifest: Manifest): void {
  const Model = models[manifest.kind];
  assert.ok(Model !== undefined, `a model for kind ${manifest.kind}`);
  new Model(manifest as never).validate();
}

const manifests = readManifests(readFileSync(manifestPath, 'utf8'));
const deployment = manifests.find((manifest) => manifest.kind === 'Deployment')!;
const podSpec = deployment.spec.template.spec;
const setupContainer = podSpec.initContainers.find((container) => container.name === 'clamp-setup')!;
const originContainer = podSpec.containers.find((container) => container.name === 'origin')!;
const originYaml = manifests.find((manifest) => manifest.kind === 'ConfigMap')!.data!['origin.yaml']!;
const envOf = (container: Container) =>
  Object.fromEntries(
    (container.env ?? []).filter((entry) => entry.value !== undefined).map((entry) => [entry.name, entry.value!]),
  );
/** A container's mount of a volume: the per-pod subdirectory (subPathExpr) or, with `whole`, the volume itself. */
const mountOf = (container: Container, volume: string, whole = false) =>
  container.volumeMounts.find(
    (mount) => mount.name === volume && (mount.subPathExpr === undefined) === (whole || volume !== 'clamp-pins'),
  );
const argumentOf = (container: Container, flag: string) => container.command[container.command.indexOf(flag) + 1];

describe('deploy/kubernetes/trickle.yaml', () => {
  it('is valid against the Kubernetes API schemas, object by object', () => {
    assert.deepEqual(
      manifests.map((manifest) => manifest.kind),
      ['Namespace', 'ConfigMap', 'Deployment', 'Service', 'Service'],
    );
    for (const manifest of manifests) validate(manifest);
    // The validators catch what kubectl would refuse.
    const broken = structuredClone(deployment);
    (broken.spec.template.spec.containers[0]!.ports![0] as { containerPort: unknown }).containerPort = 'https';
    assert.throws(() => validate(broken), /containerPort must be integer/);
  });

  it(
    'wires the pod: the setup pins where the origin reads, as the user the origin runs ' +
      'as, with the capabilities it needs only',
    async () => {
      const env = { POD_UID: '$(POD_UID)' };
      assert.deepEqual(
        setupContainer.env?.map((entry) => [entry.name, entry.valueFrom?.fieldRef?.fieldPath]),
        [['POD_UID', 'metadata.uid']],
      );
      assert.deepEqual(setupContainer.command.slice(0, 5), ['trickle', 'native', 'setup', '--pod-uid', env.POD_UID]);
      assert.equal(mountOf(setupContainer, 'clamp-pins')?.mountPath, argumentOf(setupContainer, '--pin'));
      assert.equal(
        mountOf(setupContainer, 'clamp-pins', true)?.mountPath,
        argumentOf(setupContainer, '--reap'),
        "reaps in the per-pod directories' parent",
      );
      assert.equal(mountOf(setupContainer, 'host-cgroup')?.mountPath, argumentOf(setupContainer, '--host-cgroup'));
      // Both containers see the same per-pod directory of the node's bpffs.
      for (const container of [setupContainer, originContainer])
        assert.equal(mountOf(container, 'clamp-pins')?.subPathExpr, env.POD_UID);
      assert.equal(
        podSpec.volumes.find((volume) => volume.name === 'clamp-pins')?.hostPath?.path.startsWith('/sys/fs/bpf/'),
        true,
      );
      assert.equal(
        envOf(originContainer).TRICKLE_DELIVERY__CLAMP__PIN_DIR,
        mountOf(originContainer, 'clamp-pins')?.mountPath,
      );
      assert.equal(
        envOf(originContainer).TRICKLE_DELIVERY__CLAMP__CGROUP,
        '/sys/fs/cgroup',
        "the container's own cgroup, a child of the pod's",
      );
      // The setup hands the pins to the image's user "trickle", whose uid the origin runs as.
      const setupUser = argumentOf(setupContainer, '--user');
      const dockerfile = await readFile(join(repoRoot, 'docker', 'Dockerfile'), 'utf8');
      assert.match(
        dockerfile,
        new RegExp(
          `useradd --system --uid ${originContainer.securityContext.runAsUser} --no-create-home ${setupUser}\\b`,
        ),
      );
      assert.deepEqual(setupContainer.securityContext.capabilities, {
        drop: ['ALL'],
        add: ['SYS_ADMIN', 'CHOWN', 'FOWNER'],
      });
      assert.deepEqual(originContainer.securityContext.capabilities, { drop: ['ALL'] });
      for (const container of [setupContainer, originContainer]) {
        assert.equal(
          container.securityContext.seccompProfile?.type,
          'RuntimeDefault',
          `${container.name}: the runtime's seccomp profile`,
        );
        assert.equal(container.securityContext.readOnlyRootFilesystem, true, `${container.name}: read-only root`);
      }
      assert.equal(originContainer.securityContext.runAsNonRoot, true);
      assert.equal(originContainer.securityContext.allowPrivilegeEscalation, false);
      // Every flag the pod passes is one the CLI has.
      const help = spawnSync(process.execPath, [join(repoRoot, 'bin', 'trickle.js'), 'native', 'setup', '--help'], {
        encoding: 'utf8',
      }).stdout;
      for (const flag of setupContainer.command.filter((word) => word.startsWith('--')))
        assert.ok(help.includes(`${flag} `), `trickle native setup has ${flag}`);
    },
  );

  it('configures the origin through its own config schema; ports, probes and scraping agree with it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trickle-k8s-config-'));
    try {
      const file = join(dir, 'origin.yaml');
      const certificates = await makeDevCertificates(join(dir, 'tls'), ['127.0.0.1']);
      const values = parseYaml(originYaml) as Record<string, unknown>;
      await writeFile(
        file,
        stringifyYaml({ ...values, media: testMediaRoot(), tls: { cert: certificates.cert, key: certificates.key } }),
      );
      const config = await loadConfig({ file, env: envOf(originContainer) });
      const ports = Object.fromEntries(originContainer.ports!.map((port) => [port.name, port.containerPort]));
      assert.equal(ports.https, config.port);
      assert.equal(ports.admin, config.admin?.port);
      assert.equal(config.delivery.clamp.pinDir, '/run/trickle/bpf');
      assert.deepEqual(
        [originContainer.readinessProbe?.httpGet, originContainer.livenessProbe?.httpGet],
        [
          { path: '/readyz', port: 'admin' },
          { path: '/healthz', port: 'admin' },
        ],
      );
      assert.equal(Number(deployment.spec.template.metadata.annotations['prometheus.io/port']), config.admin?.port);
      const services = manifests.filter((manifest) => manifest.kind === 'Service');
      for (const service of services)
        for (const port of service.spec.ports!)
          assert.ok(
            port.targetPort in ports,
            `${service.metadata.name}: targets the container port ${port.targetPort}`,
          );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

const root = typeof process.getuid === 'function' && process.getuid() === 0;
const missing = !root
  ? "the init container's setup needs root"
  : !existsSync('/usr/bin/unshare')
    ? 'unshare (util-linux) missing'
    : findCgroup2Mount() === undefined
      ? 'no cgroup v2 hierarchy'
      : undefined;
if (missing !== undefined && process.env.CI === 'true')
  throw new Error(`CI must run the Kubernetes pod's steps, but ${missing}`);
const skip = missing ?? false;
if (skip !== false) console.log(`# skipping the Kubernetes pod's steps: ${skip}`);

function sh(command: string): { ok: boolean; output: string } {
  const result = spawnSync('sh', ['-c', command], { encoding: 'utf8', timeout: 60_000 });
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}` };
}

describe("the Kubernetes pod's steps, as a kubelet runs them", { skip }, () => {
  const podUid = randomUUID();
  const gonePodUid = randomUUID();
  const hierarchy = findCgroup2Mount() ?? '/sys/fs/cgroup';
  // kubelet's cgroupfs-driver layout, under a name of its own so a real kubelet's is never touched.
  const kubepods = join(hierarchy, 'kubepods-trickle-test');
  const podCgroup = join(kubepods, 'burstable', `pod${podUid}`);
  const containerCgroup = join(podCgroup, 'origin');
  const nodeBpffs = '/run/trickle/k8s-test-node-bpf';
  const podPins = '/run/trickle/k8s-test-pod-pins';
  let dir: string;
  let origin: ChildProcess | undefined;
  let output = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'trickle-k8s-'));
    await chmod(dir, 0o755);
    await mkdir(containerCgroup, { recursive: true });
    // The node's bpffs, and the pod's directory in it bind-mounted where the containers mount it.
    await mkdir(nodeBpffs, { recursive: true });
    await mkdir(podPins, { recursive: true });
    // A pod deleted earlier left its directory behind.
    for (const step of [
      `mount -t bpf bpf ${nodeBpffs}`,
      `mkdir -p ${nodeBpffs}/trickle/${podUid} ${nodeBpffs}/trickle/${gonePodUid}`,
      `mount --bind ${nodeBpffs}/trickle/${podUid} ${podPins}`,
    ]) {
      const result = sh(step);
      assert.ok(result.ok, `${step}: ${result.output}`);
    }
  });

  after(async () => {
    if (origin !== undefined && origin.exitCode === null) {
      origin.kill('SIGKILL');
      await once(origin, 'exit');
    }
    await teardownClamp({ pinDir: podPins }).catch(() => undefined);
    sh(`umount ${podPins}; umount ${nodeBpffs}`);
    for (const cgroup of [containerCgroup, podCgroup, join(kubepods, 'burstable'), kubepods])
      await rmdir(cgroup).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it(
    "the init container pins the clamp on the pod's cgroup; the origin container, " +
      'unprivileged in a child cgroup, is clamped by it',
    async () => {
      // The init container's command, with the node's paths where the pod's mounts put them.
      const places: Record<string, string> = {
        [mountOf(setupContainer, 'host-cgroup')!.mountPath]: hierarchy,
        [mountOf(setupContainer, 'clamp-pins')!.mountPath]: podPins,
        [mountOf(setupContainer, 'clamp-pins', true)!.mountPath]: join(nodeBpffs, 'trickle'),
        trickle: join(repoRoot, 'bin', 'trickle.js'),
      };
      const setup = setupContainer.command
        .map((word) => word.replace('$(POD_UID)', podUid))
        .map((word) => places[word] ?? word);
      const userAt = setup.indexOf('--user');
      setup[userAt + 1] = 'nobody';
      const setupRun = spawnSync(process.execPath, setup, { encoding: 'utf8', timeout: 60_000 });
      assert.equal(setupRun.status, 0, setupRun.stderr);
      assert.match(setupRun.stdout, new RegExp(`attached to cgroup ${podCgroup}`), 'found the pod by its UID');
      assert.ok(
        existsSync(join(nodeBpffs, 'trickle', podUid, 'trickle_targets')),
        "maps pinned in the pod's directory of the node's bpffs",
      );
      assert.ok(
        !existsSync(join(nodeBpffs, 'trickle', gonePodUid)),
        'the pins of a pod gone from the node were reaped',
      );
      assert.match(
        setupRun.stdout,
        new RegExp(`removed the clamp pins of 1 pod\\(s\\) gone from this node: ${gonePodUid}`),
      );
      assert.equal(sh(`stat -c %U ${podCgroup}`).output.trim(), 'root', "the pod's cgroup stays kubelet's");

      // The origin container's config: the ConfigMap with what this host fixes.
      const { configPath, ca, publicUrl, adminUrl } = await writeDeployedConfig(
        dir,
        originYaml,
        19443 + (process.pid % 500),
      );
      const serve = originContainer.command
        .map((word) =>
          word === 'trickle'
            ? `${process.execPath} ${join(repoRoot, 'bin', 'trickle.js')}`
            : word === '/etc/trickle/origin.yaml'
              ? configPath
              : word,
        )
        .join(' ');
      const environment = { ...envOf(originContainer), TRICKLE_DELIVERY__CLAMP__PIN_DIR: podPins };
      // As the runtime starts a container: in its cgroup (the pod's child), in its own cgroup and
      // mount namespaces with cgroup2 at /sys/fs/cgroup, as the container's user.
      origin = spawn(
        'sh',
        [
          '-c',
          `echo $$ > ${containerCgroup}/cgroup.procs && exec unshare --cgroup --mount sh -c ` +
            `'mount -t cgroup2 none /sys/fs/cgroup && exec setpriv --reuid=nobody ` +
            `--regid=nogroup --clear-groups ${serve}'`,
        ],
        {
          env: { PATH: process.env.PATH, ...environment },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      origin.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      origin.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));

      await assertReadyWithBpf(adminUrl, origin, () => output);
      const progressive = await httpsGet(`${publicUrl}/media/demo/progressive.mp4`, ca, { range: 'bytes=0-799999' });
      assert.equal(progressive.status, 206);
      const record = await progressiveFlowRecord(adminUrl);
      assert.equal(record.backend, 'bpf', record.reason);
      assert.equal(
        kernelPhaseOf(record)?.started,
        true,
        `the throttled phase ran in the kernel (program on the pod's cgroup, socket in the ` +
          `container's): ${JSON.stringify(kernelPhaseOf(record))}`,
      );
      origin.kill('SIGTERM');
      const [code] = (await once(origin, 'exit')) as [number | null];
      assert.equal(code, 0, output);
    },
  );
});
