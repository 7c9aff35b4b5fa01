/**
 * `trickle bench <name> [options]`: the benchmarks that write bench/results/ (docs/benchmarks.md).
 * They live in the checkout (bench/, built into dist/bench/), not in this package: they use the
 * checkout's scripts and media and write its results files, so an installed CLI says so.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Argument, type Command } from 'commander';
import { examples } from '@trickle/e2e/command-help';
import { CliError } from './errors.js';

interface BenchmarkModule {
  main(argv: readonly string[]): Promise<void>;
}

/** The checkout's built benchmarks, beside this package in the repository. */
const benchDir = new URL('../../../dist/bench/', import.meta.url);

async function loadBenchmark(file: string): Promise<BenchmarkModule> {
  const url = new URL(file, benchDir);
  if (!existsSync(fileURLToPath(url)))
    throw new CliError(
      'CLI_ERR_NOT_A_CHECKOUT',
      `the benchmarks run from a checkout of the repository (built: ${fileURLToPath(url)} is missing): ` +
        'clone it, run ./scripts/setup, then npx trickle bench there',
    );
  return (await import(url.href)) as BenchmarkModule;
}

const benchmarks: Readonly<
  Record<string, { readonly description: string; readonly load: () => Promise<BenchmarkModule> }>
> = {
  origin: {
    description: 'serving speed against nginx (wrk): manifests, segments, 64 kB ranges',
    load: () => loadBenchmark('origin-vs-nginx.js'),
  },
  'abr-sweep': {
    description:
      "the ABR-aware rate against the ABR families players ship: player-sim's throughput families at " +
      'safety factors 0.7-0.95 and the buffer rules, trickle-abr, sammy and trickle over bulk per link',
    load: () => loadBenchmark('abr-sweep.js'),
  },
  pacing: {
    description:
      'paced flows per policy beside nginx limit_rate, in the lab (MSS 1448, 100 ms RTT) ' +
      "and on loopback: CPU per delivered Gbit/s and each flow's rate against its aim " +
      '(root)',
    load: () => loadBenchmark('paced-flows.js'),
  },
  qoe: {
    description:
      'the QoE matrix: dash.js, hls.js and simulated players through the lab per link, ' +
      'policy and CMCD, with intervals (root)',
    load: () => loadBenchmark('qoe-matrix.js'),
  },
  soak: {
    description:
      'live simulated players through the lab for a long time: origin RSS and event-loop delay over time (root)',
    load: () => loadBenchmark('soak.js'),
  },
  population: {
    description:
      "the population lab's accuracy per viewer link at the population's load: RTT, " +
      'goodput, drops at the right queue, delay-line CPU (root)',
    load: () => loadBenchmark('population-accuracy.js'),
  },
  corpus: {
    description:
      'every shape of the packaging corpus (ffmpeg, Shaka Packager) played by dash.js, ' +
      'hls.js and <video> through the lab: played to the end, bodies equal to the files, ' +
      "flow records at each segment's rate (root)",
    load: () => loadBenchmark('corpus-playback.js'),
  },
  indexing: {
    description:
      'the media index at library scale: CPU to index a 2-hour title (on-demand and ' +
      'segment templates), and an origin booting on 1,000 titles under request load',
    load: () => loadBenchmark('indexing.js'),
  },
  lab: {
    description:
      "the lab's accuracy per link backend: configured vs measured RTT, goodput, random " +
      'loss, tail drops; --in-vm measures netem in a guest kernel where this one has none ' +
      '(root)',
    load: () => loadBenchmark('lab-accuracy.js'),
  },
};

export function registerBenchCommands(program: Command): void {
  program
    .command('bench')
    .description(
      `run a benchmark: ${Object.entries(benchmarks)
        .map(([name, b]) => `${name} (${b.description})`)
        .join('; ')}; options after the name, e.g. "trickle bench soak --minutes 60 --players 1000"`,
    )
    // Not .choices(): with the help option off (a benchmark's own --help passes through), a bare
    // `trickle bench --help` would be refused as a benchmark's name.
    .addArgument(new Argument('[name]', `the benchmark: ${Object.keys(benchmarks).join(', ')}`))
    .argument('[options...]', "the benchmark's own options (--help lists them)")
    .addHelpText(
      'after',
      examples(
        'npx trickle bench origin',
        'sudo npx trickle bench pacing --flows 300 --seconds 12',
        'sudo npx trickle bench qoe --links dsl-6mbit --policies bulk,trickle-abr --sessions 8',
        'sudo npx trickle bench soak --minutes 60 --players 1000',
        'sudo npx trickle bench lab --in-vm',
        'npx trickle bench pacing --help',
      ),
    )
    .helpOption(false)
    .allowUnknownOption()
    .passThroughOptions()
    .action(async (name: string | undefined, options: string[], _flags: unknown, command: Command) => {
      if (name === '--help' || name === '-h') {
        command.outputHelp();
        return;
      }
      const benchmark = name === undefined ? undefined : benchmarks[name];
      if (benchmark === undefined) {
        command.error(
          `error: ${name === undefined ? "missing argument 'name'" : `argument 'name' is invalid`}. ` +
            `Allowed choices are ${Object.keys(benchmarks).join(', ')}.`,
        );
      }
      await (await benchmark.load()).main(options);
    });
}
