/** `trickle bench <origin|pacing|qoe|soak> [options]`: the benchmarks that write bench/results/ (see the README's Benchmarks). */
import { Argument, Command } from 'commander';

const benchmarks: Readonly<Record<string, { readonly description: string; readonly load: () => Promise<{ main(argv: readonly string[]): Promise<void> }> }>> = {
  origin: { description: 'serving speed against nginx (wrk): manifests, segments, 64 kB ranges', load: () => import('../bench/origin-vs-nginx.js') },
  pacing: { description: '500 and 1,000 paced 1 Mbit/s flows per policy against nginx limit_rate: CPU per delivered Gbit/s', load: () => import('../bench/paced-flows.js') },
  qoe: { description: 'the QoE matrix: dash.js, hls.js and simulated players through the lab per link, policy and CMCD, with intervals (root)', load: () => import('../bench/qoe-matrix.js') },
  soak: { description: 'live simulated players through the lab for a long time: origin RSS and event-loop delay over time (root)', load: () => import('../bench/soak.js') },
};

export function registerBenchCommands(program: Command): void {
  program
    .command('bench')
    .description(`run a benchmark: ${Object.entries(benchmarks).map(([name, b]) => `${name} (${b.description})`).join('; ')}; options after the name, e.g. "trickle bench soak --minutes 60 --players 1000"`)
    .addArgument(new Argument('<name>', 'the benchmark').choices(Object.keys(benchmarks)))
    .argument('[options...]', "the benchmark's own options (--help lists them)")
    .helpOption(false)
    .passThroughOptions()
    .action(async (name: string, options: string[]) => {
      await (await benchmarks[name]!.load()).main(options);
    });
}
