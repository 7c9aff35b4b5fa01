/** `trickle lab ...`: the emulated access link between origin and player. */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { type Command, Option } from 'commander';
import type { LabHost, LabPlace, LinkPopulation, LinkSpec } from '@trickle/e2e';
import { examples } from '@trickle/e2e/command-help';
import { linkDistributions, profileLink, profiles } from '@trickle/e2e/links';
import { parseTrace } from '@trickle/player-sim/traces';
import { nonNegativeInteger, positiveInteger, positiveNumber } from './number-arguments.js';

/** The lab, loaded when a lab command runs: the other commands and --help go without it. */
const labModule = () => import('@trickle/e2e');

interface UpOptions {
  profile?: string;
  rate?: string;
  upRate?: string;
  rtt?: string;
  bufferBdp?: number;
  buffer?: string;
  loss?: string;
  trace?: string;
  seed?: number;
  backend: 'auto' | 'netem' | 'delayline';
  cross?: boolean;
  population?: string;
  viewers?: number;
  uplinkRate?: string;
}

/** `--population dc1-like --viewers 100` or `--population links.csv`: one access link per viewer. */
async function populationFrom(opts: UpOptions): Promise<LinkPopulation> {
  const { drawLinks, E2eError, linkPopulation, parseLinksCsv, parseRate } = await labModule();
  const source = opts.population!;
  for (const single of ['profile', 'rate', 'rtt', 'trace', 'loss', 'buffer', 'bufferBdp', 'upRate', 'cross'] as const) {
    if (opts[single] !== undefined)
      throw new E2eError(
        'E2E_ERR_POPULATION',
        `--population gives every viewer its own link: leave out ` +
          `--${single.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`,
      );
  }
  const seed = opts.seed ?? 1;
  const uplinkRateBps = opts.uplinkRate === undefined ? undefined : parseRate(opts.uplinkRate);
  if (source in linkDistributions) {
    const viewers = opts.viewers ?? 100;
    return linkPopulation(drawLinks(source, viewers, seed), { source, seed, uplinkRateBps });
  }
  if (!source.endsWith('.csv'))
    throw new E2eError(
      'E2E_ERR_POPULATION',
      `--population must be ${Object.keys(linkDistributions).join(', ')} or a .csv file ` +
        `of rate,rtt,buffer[,loss] rows (got "${source}")`,
    );
  if (opts.viewers !== undefined)
    throw new E2eError('E2E_ERR_POPULATION', 'a CSV population has a viewer per row: leave out --viewers');
  let text: string;
  try {
    text = await readFile(source, 'utf8');
  } catch (error) {
    throw new E2eError('E2E_ERR_POPULATION', `cannot read ${source}: ${(error as Error).message}`);
  }
  return linkPopulation(parseLinksCsv(text, basename(source)), {
    source: `csv:${basename(source)}`,
    seed,
    uplinkRateBps,
  });
}

async function linkFrom(opts: UpOptions): Promise<LinkSpec> {
  const { E2eError, parseBytes, parseDurationMs, parseLoss, parseRate, symmetricLink } = await labModule();
  const trace =
    opts.trace === undefined ? undefined : parseTrace(await readFile(opts.trace, 'utf8'), basename(opts.trace));
  if (opts.profile !== undefined) {
    if (opts.rate !== undefined || opts.rtt !== undefined)
      throw new E2eError('E2E_ERR_LINK_SPEC', 'give either --profile or --rate/--rtt, not both');
    const link = profileLink(opts.profile);
    return {
      ...link,
      ...(trace === undefined ? {} : { trace }),
      ...(opts.seed === undefined ? {} : { seed: opts.seed }),
    };
  }
  if (opts.rate === undefined || opts.rtt === undefined)
    throw new E2eError(
      'E2E_ERR_LINK_SPEC',
      `give --profile <${Object.keys(profiles).join('|')}> or both --rate and --rtt`,
    );
  return symmetricLink({
    rateBps: parseRate(opts.rate),
    upRateBps: opts.upRate === undefined ? undefined : parseRate(opts.upRate),
    rttMs: parseDurationMs(opts.rtt),
    bufferBdp: opts.bufferBdp,
    bufferBytes: opts.buffer === undefined ? undefined : parseBytes(opts.buffer),
    lossRate: opts.loss === undefined ? undefined : parseLoss(opts.loss),
    seed: opts.seed,
    trace,
  });
}

interface RouterFlags extends Omit<UpOptions, 'cross'> {
  originSide: string;
  accessSide: string;
  forwarding: 'routed' | 'bridge';
  stateDir: string;
}

function linkOptions(command: Command): Command {
  return command
    .option('--profile <name>', `a preset: ${Object.keys(profiles).join(', ')}`)
    .option('--rate <rate>', 'downlink rate, e.g. 6mbit')
    .option('--up-rate <rate>', 'uplink rate (default: the downlink rate)')
    .option('--rtt <duration>', 'round-trip propagation delay, e.g. 40ms')
    .option('--buffer-bdp <n>', 'bottleneck buffer in multiples of the BDP (default: 2)', positiveNumber('buffer-bdp'))
    .option('--buffer <bytes>', 'bottleneck buffer in bytes, e.g. 64kb')
    .option('--loss <rate>', 'random downlink loss, e.g. 0.5%')
    .option('--trace <file>', 'downlink bandwidth trace (Sabre JSON, cooked "<s> <Mbit/s>", or Mahimahi)')
    .option('--seed <n>', 'seed of the random loss', nonNegativeInteger('seed'))
    .addOption(
      new Option('--backend <name>', 'link emulation').choices(['auto', 'netem', 'delayline']).default('auto'),
    );
}

/** `trickle router`: the lab's link on two interfaces of this namespace (the compose stack's router), until SIGTERM. */
function registerRouterCommand(program: Command): void {
  linkOptions(
    program
      .command('router')
      .description(
        "shape and forward between two interfaces of this host with the lab's link backends " +
          "and profiles (the compose stack's router; root or CAP_NET_ADMIN); runs until " +
          'SIGTERM',
      )
      .requiredOption('--origin-side <if>', 'interface toward the origin (egress of the uplink)')
      .requiredOption('--access-side <if>', 'interface toward the players (egress of the downlink)')
      .addOption(
        new Option('--forwarding <mode>', 'routed: IP forwarding between two networks; bridge: one subnet (the lab)')
          .choices(['routed', 'bridge'])
          .default('routed'),
      )
      .option('--state-dir <dir>', 'control files and logs', '/run/trickle/router')
      .addHelpText(
        'after',
        examples(
          'trickle router --origin-side eth0 --access-side eth1 --profile dsl-6mbit',
          'trickle router --origin-side eth0 --access-side eth1 --rate 3mbit --rtt 80ms ' +
            '--loss 0.5% --backend delayline',
        ),
      ),
  ).action(async (flags: RouterFlags) => {
    const { startRouter } = await labModule();
    const spec = await linkFrom(flags);
    const router = await startRouter({
      originSide: flags.originSide,
      accessSide: flags.accessSide,
      forwarding: flags.forwarding,
      spec,
      backend: flags.backend,
      stateDir: flags.stateDir,
    });
    const { down, up } = spec;
    process.stdout.write(
      `router (${router.backend}, ${flags.forwarding}): ${flags.originSide} ` +
        `-> ${flags.accessSide} down ${down.rateBps / 1e6} Mbit/s, up ${up.rateBps / 1e6} ` +
        `Mbit/s, RTT ${down.delayMs + up.delayMs} ms, buffer ${down.bufferBytes} ` +
        `B${spec.trace === undefined ? '' : `, trace ${spec.trace.name}`}\n`,
    );
    // Nothing else keeps the event loop alive (the delay line is a detached process): hold it until a signal.
    const holding = setInterval(() => undefined, 2 ** 30);
    await new Promise<void>((resolve) => {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve());
    });
    clearInterval(holding);
    await router.stop();
  });
}

export function registerLabCommands(program: Command): void {
  registerRouterCommand(program);
  const lab = program
    .enablePositionalOptions()
    .command('lab')
    .enablePositionalOptions()
    .description(
      'an emulated access link: origin -- router (delay, loss, bottleneck) -- player, in network namespaces (root)',
    );
  linkOptions(
    lab
      .command('up')
      .description('bring a lab up (idempotent)')
      .argument('<name>', 'lab name: 1-6 lowercase letters/digits'),
  )
    .option('--cross', 'add the cross host (competing traffic, latency probe)')
    .option(
      '--population <source>',
      `one access link per viewer instead of one for ` +
        `all: ${Object.keys(linkDistributions).join(', ')} (fitted to the Trickle paper's ` +
        `data centres) or a CSV file of rate,rtt,buffer[,loss] rows; --seed draws`,
    )
    .option('--viewers <n>', 'viewers of a drawn population (default: 100)', positiveInteger('viewers'))
    .option('--uplink-rate <rate>', "the origin's uplink that a population's viewers share (default: 1gbit)")
    .addHelpText(
      'after',
      examples(
        'sudo npx trickle lab up t --profile dsl-6mbit',
        'sudo npx trickle lab up t --rate 20mbit --rtt 40ms --buffer-bdp 1 --loss 0.1% --cross',
        'sudo npx trickle lab up t --trace traces/bus.json --rtt 100ms --buffer 64kb',
        'sudo npx trickle lab up p --population dc1-like --viewers 100 --seed 2',
        'sudo npx trickle lab up p --population viewers.csv',
      ),
    )
    .action(async (name: string, opts: UpOptions) => {
      const { describePopulation, E2eError, labUp, populationUp } = await labModule();
      if (opts.population !== undefined) {
        const population = await populationFrom(opts);
        await populationUp(name, population);
        process.stdout.write(
          `lab ${name} up (delayline, one link per ` +
            `viewer): ${describePopulation(population)}, origin ` +
            `uplink ${population.uplinkRateBps / 1e6} Mbit/s\n` +
            `  origin  10.73.0.1  (trickle lab exec ${name} origin -- <command>)\n` +
            `  viewers ${population.links[0]!.address} ` +
            `.. ${population.links[population.links.length - 1]!.address} in the player ` +
            `namespace: bind a viewer's address (curl --interface 10.73.1.1; trickle lab ` +
            `status ${name} lists the links)\n`,
        );
        return;
      }
      if (opts.viewers !== undefined || opts.uplinkRate !== undefined)
        throw new E2eError('E2E_ERR_POPULATION', '--viewers and --uplink-rate belong to --population');
      const started = await labUp(name, await linkFrom(opts), { backend: opts.backend, cross: opts.cross === true });
      const { down, up } = started.state.spec;
      process.stdout.write(
        `lab ${name} up (${started.state.backend}): down ${down.rateBps / 1e6} Mbit/s, ` +
          `up ${up.rateBps / 1e6} Mbit/s, RTT ${down.delayMs + up.delayMs} ms, ` +
          `buffer ${down.bufferBytes} ` +
          `B${down.lossRate > 0 ? `, loss ${down.lossRate * 100}%` : ''}` +
          `${started.state.spec.trace === undefined ? '' : `, trace ${started.state.spec.trace.name}`}\n` +
          Object.entries(started.state.addresses)
            .filter(([host]) => host !== 'cross' || started.state.cross)
            .map(([host, address]) => `  ${host.padEnd(7)} ${address}  (trickle lab exec ${name} ${host} -- <command>)`)
            .join('\n') +
          '\n',
      );
    });
  lab
    .command('exec')
    .description('run a command on a host of the lab')
    .argument('<name>')
    .argument('<host>', "origin, player, cross, router, or viewer:N (a population viewer's host)")
    .argument('<command...>', 'the command, after --')
    .passThroughOptions()
    .addHelpText(
      'after',
      examples(
        'sudo npx trickle lab exec t origin -- npx trickle serve --host 10.73.0.1',
        'sudo npx trickle lab exec t player -- curl -sI http://10.73.0.1:8080/media/demo/manifest.mpd',
        'sudo npx trickle lab exec p viewer:7 -- curl -s --interface 10.73.1.8 -o /dev/null ' +
          'http://10.73.0.1:8080/media/demo/progressive.mp4',
      ),
    )
    .action(async (name: string, host: string, command: string[]) => {
      const { E2eError, openLab } = await labModule();
      const viewer = /^viewer:(\d+)$/.exec(host);
      if (viewer === null && !['origin', 'player', 'cross', 'router'].includes(host))
        throw new E2eError('E2E_ERR_LAB', `host must be origin, player, cross, router or viewer:N (got "${host}")`);
      const place: LabPlace = viewer === null ? (host as LabHost | 'router') : { viewer: Number(viewer[1]) };
      process.exitCode = await (await openLab(name)).exec(place, command[0] === '--' ? command.slice(1) : command);
    });
  lab
    .command('status')
    .description('backend, addresses, bottleneck queue statistics (sent, dropped), delay-line counters')
    .argument('<name>')
    .option('--json', 'print JSON')
    .addHelpText('after', examples('sudo npx trickle lab status t', 'sudo npx trickle lab status t --json'))
    .action(async (name: string, opts: { json?: boolean }) => {
      const { describePopulation, openLab, populationStatus } = await labModule();
      const opened = await openLab(name);
      if (opened.state.population !== undefined) {
        const links = await populationStatus(opened);
        if (opts.json === true) {
          const status = { name, backend: opened.state.backend, population: opened.state.population, links };
          process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
          return;
        }
        const byViewer = new Map(opened.state.population.links.map((link) => [link.viewer, link]));
        process.stdout.write(
          `lab ${name} (delayline, one link per viewer): ${describePopulation(opened.state.population)}\n` +
            `  viewer  address        down Mbit/s  RTT ms  buffer B   sent B (down)  drops  backlog B\n` +
            links
              .map((l) => {
                const link = byViewer.get(l.viewer)!;
                return (
                  `  ${String(l.viewer).padStart(6)}  ${l.address.padEnd(13)} ` +
                  ` ${(link.down.rateBps / 1e6).toFixed(2).padStart(11)} ` +
                  ` ${(link.down.delayMs + link.up.delayMs).toFixed(1).padStart(6)} ` +
                  ` ${String(link.down.bufferBytes).padStart(8)} ` +
                  ` ${String(l.down.sentBytes).padStart(13)}  ${String(l.down.drops).padStart(5)} ` +
                  ` ${String(l.down.backlogBytes).padStart(9)}`
                );
              })
              .join('\n') +
            '\n',
        );
        return;
      }
      const status = await opened.status();
      if (opts.json === true) {
        process.stdout.write(`${JSON.stringify(status, null, 2)}\n`);
        return;
      }
      const q = status.bottleneck;
      process.stdout.write(
        `lab ${name} (${status.backend})\n` +
          `  downlink bottleneck: sent ${q.down.sentPackets} packets (${q.down.sentBytes} B), ` +
          `dropped ${q.down.drops}, backlog ${q.down.backlogBytes} B\n` +
          `  uplink bottleneck:   sent ${q.up.sentPackets} packets (${q.up.sentBytes} B), ` +
          `dropped ${q.up.drops}, backlog ${q.up.backlogBytes} B\n` +
          (status.forwarding === undefined ? '' : `  delay line: ${JSON.stringify(status.forwarding)}\n`),
      );
    });
  lab
    .command('down')
    .description('remove the lab: processes, namespaces, veths, state (also after a crash)')
    .argument('<name>')
    .addHelpText('after', examples('sudo npx trickle lab down t'))
    .action(async (name: string) => {
      const { labDown } = await labModule();
      await labDown(name);
      process.stdout.write(`lab ${name} down\n`);
    });
  lab
    .command('profiles')
    .description('list the link presets')
    .addHelpText('after', examples('npx trickle lab profiles'))
    .action(() => {
      for (const profile of Object.values(profiles))
        process.stdout.write(`${profile.name.padEnd(12)} ${profile.description}\n`);
    });
}
