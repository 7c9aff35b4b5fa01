/**
 * The `trickle` command line. Each command validates its flags, calls a package's public API and
 * prints errors as one clear line (with the error code), never a stack trace for a user error.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { corpusShapes, policyNames, resolveConfig } from '@trickle/origin/command-help';
import { examples, stageProgress } from '@trickle/e2e/command-help';
import { registerBenchCommands } from './bench-command.js';
import { registerE2eCommands } from './e2e-command.js';
import { registerExperimentCommands } from './experiment-command.js';
import { registerLabCommands } from './lab-command.js';
import { registerNativeCommands } from './native-command.js';
import { registerSimCommands } from './sim-command.js';
import { nonNegativeInteger, nonNegativeNumber, positiveInteger, positiveNumber } from './number-arguments.js';

/**
 * The origin, loaded when a command runs: --help and the commands of the other packages go without its server (each
 * package is loaded by the commands that use it: the lab's, the simulator's, the browser harness's).
 */
const origin = () => import('@trickle/origin');

function port(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0 || parsed > 65535)
    throw new InvalidArgumentError('port must be an integer from 0 to 65535');
  return parsed;
}

interface ServeFlags {
  media?: string;
  port?: number;
  host?: string;
  config?: string;
  logLevel?: string;
  policy?: string;
  ab?: string;
  abSeed?: number;
  allowPolicyOverride?: boolean;
  startupSeconds?: number;
  clampBackend?: string;
  congestionControl?: string;
  initialWindow?: number;
  flows?: string;
  tlsCert?: string;
  tlsKey?: string;
  adminPort?: number;
  adminHost?: string;
  publicOps?: boolean;
}

export function buildProgram(): Command {
  const program = new Command('trickle')
    .description("Trickle: a DASH/HLS origin that paces responses like Google's Trickle, and a QoE lab")
    .version(
      (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version,
      '-V, --version',
      'the version of Trickle',
    )
    .showHelpAfterError()
    .configureOutput({ outputError: (text, write) => write(text) });

  program.addHelpText(
    'after',
    examples(
      'npx trickle media demo --out media/demo',
      'npx trickle serve',
      'npx trickle serve --help',
      '# outside a checkout, "npx trickle" fetches an unrelated npm package: run node <checkout>/bin/trickle.js',
    ),
  );

  const media = program
    .command('media')
    .description("demo media, what the origin reads of an asset, a corpus of real packagers' output");
  media
    .command('demo')
    .description('synthesize a VBR demo clip and package it (DASH + HLS CMAF, progressive MP4)')
    .option('--out <dir>', 'output directory (an asset directory)', 'media/demo')
    .option('--duration <seconds>', 'clip duration in seconds', positiveNumber('duration'), 120)
    .option('--overwrite', 'replace an existing, non-empty output directory')
    .option('--if-missing', 'do nothing when the output already holds a manifest')
    .addHelpText(
      'after',
      examples('npx trickle media demo', 'npx trickle media demo --out media/short --duration 24 --overwrite'),
    )
    .action(async (opts: { out: string; duration: number; overwrite?: boolean; ifMissing?: boolean }) => {
      const outDir = resolve(opts.out);
      if (opts.ifMissing === true && existsSync(join(outDir, 'manifest.mpd'))) {
        process.stderr.write(`demo media already in ${outDir}\n`);
        return;
      }
      const { generateDemoMedia } = await origin();
      const progress = stageProgress();
      const startedMs = Date.now();
      await generateDemoMedia({
        outDir,
        durationSec: opts.duration,
        overwrite: opts.overwrite === true || opts.ifMissing === true,
        onProgress: progress.update,
      });
      progress.stop();
      process.stderr.write(`demo media written to ${outDir} in ${((Date.now() - startedMs) / 1000).toFixed(1)} s\n`);
    });

  media
    .command('inspect')
    .description(
      'what the origin understood of an asset folder: renditions, segments, rate range, what it could not read and why',
    )
    .argument('<dir>', 'an asset folder (its manifests at the top)')
    .option('--json', 'the index summary as JSON (what GET /api/assets/<asset> answers, with issues)')
    .option('--segments', 'with --json, every segment too')
    .addHelpText(
      'after',
      examples('npx trickle media inspect media/demo', 'npx trickle media inspect /srv/vod/title-42 --json --segments'),
    )
    .action(async (dir: string, opts: { json?: boolean; segments?: boolean }) => {
      const { describeAsset, inspectAsset, summarizeIndex } = await origin();
      const index = await inspectAsset(dir);
      process.stdout.write(
        opts.json === true
          ? `${JSON.stringify(summarizeIndex(index, { includeSegments: opts.segments === true }), null, 2)}\n`
          : `${describeAsset(index).join('\n')}\n`,
      );
    });

  media
    .command('corpus')
    .description(
      'one source packaged by ffmpeg and Shaka Packager in every VOD shape (DASH ' +
        'templates, lists, on-demand; HLS TS and fMP4, byte ranges; progressive; encrypted), ' +
        'each indexed, with a README table',
    )
    .requiredOption('--out <dir>', 'the corpus folder (a media root: serve it with trickle serve --media <dir>)')
    .option('--duration <seconds>', 'source length, an even number of seconds', positiveInteger('duration'), 8)
    .option('--shapes <names>', `only these shapes, comma-separated (${corpusShapes.map((s) => s.name).join(', ')})`)
    .addHelpText(
      'after',
      examples(
        'npx trickle media corpus --out .cache/corpus',
        'npx trickle media corpus --out /tmp/corpus --duration 60 --shapes shaka-on-demand,ffmpeg-hls-ts',
      ),
    )
    .action(async (opts: { out: string; duration: number; shapes?: string }) => {
      const { buildCorpus, describeShapeOutcome } = await origin();
      const startedMs = Date.now();
      const results = await buildCorpus({
        outDir: opts.out,
        durationSec: opts.duration,
        shapes: opts.shapes
          ?.split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        onShape: (shape, outcome) => process.stderr.write(`${shape.name}: ${describeShapeOutcome(outcome)}\n`),
      });
      const indexed = results.filter((r) => r.outcome.status === 'indexed').length;
      process.stderr.write(
        `corpus: ${indexed} of ${results.length} shapes indexed ` +
          `in ${((Date.now() - startedMs) / 1000).toFixed(1)} s; the table ` +
          `is ${join(resolve(opts.out), 'README.md')}\n`,
      );
      if (indexed < results.length) process.exitCode = 1;
    });

  program
    .command('package')
    .description('package any media file ffmpeg can read into the same layout as the demo')
    .argument('<input>', 'input media file')
    .requiredOption('--out <dir>', 'output asset directory')
    .option(
      '--ladder <spec>',
      '<N>p rungs (N pixels on the short side) or <W>x<H>, like "360p:800k,720p:2800k" or ' +
        '"1280x720:2.8M" (default: 234p:400k,360p:800k,540p:1400k,720p:2800k, the rungs ' +
        'larger than the source replaced by its own size)',
    )
    .option('--segment-seconds <s>', 'segment and GOP duration', positiveNumber('segment-seconds'), 2)
    .option('--force', 'allow rungs taller than the source (upscaling)')
    .option('--overwrite', 'replace an existing, non-empty output directory')
    .addHelpText(
      'after',
      examples(
        'npx trickle package talk.mov --out media/talk',
        'npx trickle package phone.mp4 --out media/phone --ladder "360p:800k,720p:2.8M" --segment-seconds 4',
      ),
    )
    .action(
      async (
        input: string,
        opts: { out: string; ladder?: string; segmentSeconds: number; force?: boolean; overwrite?: boolean },
      ) => {
        const { packageInput } = await origin();
        const progress = stageProgress();
        const { rungs, durationSec } = await packageInput({
          input: resolve(input),
          outDir: resolve(opts.out),
          ladder: opts.ladder,
          segmentSeconds: opts.segmentSeconds,
          force: opts.force === true,
          overwrite: opts.overwrite === true,
          onProgress: progress.update,
        });
        progress.stop();
        process.stderr.write(
          `packaged ${durationSec.toFixed(1)} s ` +
            `into ${resolve(opts.out)}: ` +
            `${rungs.map((r) => `${r.width}x${r.height}@${Math.round(r.bitrateBps / 1000)}k`).join(', ')}\n`,
        );
      },
    );

  // Flags left out take their value from the config file, the environment or these defaults.
  const defaults = resolveConfig([]);
  program
    .command('serve')
    .description('run the origin (DASH, HLS, progressive MP4, /player/, /api/assets)')
    .option('--media <dir>', `media root: one subdirectory per asset (default: ${defaults.media}/, with the demo)`)
    .addOption(new Option('--port <port>', `TCP port (default: ${defaults.port})`).argParser(port))
    .option('--host <address>', `address to listen on (default: ${defaults.host})`)
    .option('--config <file>', 'config file (YAML or JSON); also TRICKLE_CONFIG')
    .addOption(
      new Option('--log-level <level>', 'log level').choices([
        'fatal',
        'error',
        'warn',
        'info',
        'debug',
        'trace',
        'silent',
      ]),
    )
    .addOption(
      new Option('--policy <name>', `default delivery policy (default: ${defaults.delivery.policy})`).choices([
        ...policyNames,
      ]),
    )
    .option(
      '--ab <groups>',
      'A/B groups per TCP connection, e.g. ' +
        '"bulk:25,app-pacing:25,trickle:25,app-pacing-16k:25" or ' +
        '"baseline1=app-pacing:50,baseline2=app-pacing:50"',
    )
    .addOption(
      new Option('--ab-seed <n>', `seed of the A/B assignment (default: ${defaults.delivery.abSeed})`).argParser(
        nonNegativeInteger('ab-seed'),
      ),
    )
    .option('--allow-policy-override', 'let ?policy=<name> choose the policy of a request (experiments)')
    .addOption(
      new Option(
        '--startup-seconds <s>',
        `media seconds sent at full speed before throttling (default: ${defaults.delivery.startupSec})`,
      ).argParser(nonNegativeNumber('startup-seconds')),
    )
    .addOption(
      new Option(
        '--clamp-backend <name>',
        `the cwnd clamp backend wanted for trickle; weaker ones are used, and recorded, ` +
          `when it cannot be (default: ${defaults.delivery.clamp.backend})`,
      ).choices(['bpf', 'pacing-rate', 'none']),
    )
    .option('--congestion-control <name>', 'TCP congestion control for every connection (bbr, cubic, reno, ...)')
    .addOption(
      new Option(
        '--initial-window <packets>',
        'initial congestion window of every connection (TCP_BPF_IW; needs root for the BPF program)',
      ).argParser(positiveInteger('initial-window')),
    )
    .option(
      '--flows <dest>',
      `flow records as JSON lines: none, stdout or a file path; GET /api/flows always has ` +
        `recent ones (default: ${defaults.flows.log})`,
    )
    .option('--tls-cert <file>', 'serve HTTPS (HTTP/1.1) with this PEM certificate chain; re-read on SIGHUP')
    .option('--tls-key <file>', 'the PEM private key of --tls-cert')
    .addOption(
      new Option(
        '--admin-port <port>',
        'serve /metrics and /api/flows (client addresses) on this port only, with /healthz and /readyz',
      ).argParser(port),
    )
    .option('--admin-host <address>', 'address of the admin listener (default: 127.0.0.1)')
    .option(
      '--public-ops',
      'serve /metrics and /api/flows on the public listener even on an address others ' +
        'reach, without --admin-port (a lab or a demo; by default only loopback serves them)',
    )
    .addHelpText(
      'after',
      examples(
        'npx trickle serve',
        'npx trickle serve --policy trickle --port 8080 --host 0.0.0.0',
        'npx trickle serve --ab "bulk:50,trickle-abr:50" --flows flows.jsonl',
        'npx trickle serve --tls-cert chain.pem --tls-key key.pem --port 8443 --admin-port 9464',
        'TRICKLE_DELIVERY__STARTUP_SEC=10 npx trickle serve --config origin.yaml',
      ),
    )
    .action(async (opts: ServeFlags) => {
      const { checkDemoMedia, loadConfig, OriginError, startOrigin } = await origin();
      if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined))
        throw new OriginError(
          'ORIGIN_ERR_CONFIG',
          '--tls-cert and --tls-key go together: HTTPS needs the certificate and its key',
        );
      const config = await loadConfig({
        file: opts.config,
        env: process.env,
        flags: {
          media: opts.media,
          port: opts.port,
          host: opts.host,
          logLevel: opts.logLevel,
          delivery: {
            policy: opts.policy,
            ab: opts.ab,
            abSeed: opts.abSeed,
            allowPolicyOverride: opts.allowPolicyOverride,
            startupSec: opts.startupSeconds,
            clamp: opts.clampBackend === undefined ? undefined : { backend: opts.clampBackend },
            transport: { congestionControl: opts.congestionControl, initialWindowPackets: opts.initialWindow },
          },
          flows: opts.flows === undefined ? undefined : { log: opts.flows },
          tls:
            opts.tlsCert === undefined && opts.tlsKey === undefined
              ? undefined
              : { cert: opts.tlsCert, key: opts.tlsKey },
          admin:
            opts.adminPort === undefined && opts.adminHost === undefined
              ? undefined
              : { port: opts.adminPort, host: opts.adminHost },
          publicOps: opts.publicOps,
        },
      });
      if (opts.media === undefined && process.env.TRICKLE_MEDIA === undefined) await checkDemoMedia(config.media);
      await startOrigin(config, { handleSignals: true });
    });

  program
    .command('tls')
    .description('HTTPS helpers')
    .command('dev-cert')
    .description(
      'make a throwaway CA and a server certificate it signs, for HTTPS in development and tests (never production)',
    )
    .option('--out <dir>', 'where to write ca.pem, chain.pem and key.pem', '.cache/tls')
    .option('--host <names...>', 'DNS names and IP addresses the certificate is for', ['localhost', '127.0.0.1'])
    .addHelpText(
      'after',
      examples(
        'npx trickle tls dev-cert',
        'npx trickle tls dev-cert --out .cache/tls --host localhost 127.0.0.1 origin.test',
      ),
    )
    .action(async (opts: { out: string; host: string[] }) => {
      const { makeDevCertificates } = await origin();
      const made = await makeDevCertificates(resolve(opts.out), opts.host);
      process.stdout.write(
        `serve with:  npx trickle serve --tls-cert ${made.cert} ` +
          `--tls-key ${made.key}\ntrust:       ${made.caCert} (curl --cacert; a browser's or ` +
          `system's trust store)\n`,
      );
    });

  registerNativeCommands(program);
  registerLabCommands(program);
  registerSimCommands(program);
  registerE2eCommands(program);
  registerExperimentCommands(program);
  registerBenchCommands(program);
  return program;
}

/** Coded errors of every package (ORIGIN_ERR_*, NATIVE_ERR_*, E2E_ERR_*, ...) and syscall errors (EPERM, ...). */
function isCodedError(error: unknown): error is Error & { code: string } {
  // ORIGIN_ERR_*, SIM_ERR_*, NATIVE_ERR_*, E2E_ERR_*, CLI_ERR_* and errno names.
  return (
    error instanceof Error &&
    typeof (error as { code?: unknown }).code === 'string' &&
    /^([A-Z0-9]+_ERR_|E[A-Z]+$)/.test((error as unknown as { code: string }).code)
  );
}

export async function main(argv: readonly string[]): Promise<void> {
  try {
    await buildProgram().parseAsync([...argv]);
  } catch (error) {
    if (isCodedError(error)) {
      process.stderr.write(`trickle: ${error.message} [${error.code}]\n`);
      process.exitCode = 1;
      return;
    }
    throw error;
  }
}

await main(process.argv);
