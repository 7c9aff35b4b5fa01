/**
 * The lab's accuracy table: configured vs measured RTT, bulk goodput, random loss and tail drops,
 * on each backend this kernel has, and with --in-vm the netem backend inside a guest kernel that
 * has it (scripts/netem-vm) where this one does not. Writes bench/results/lab-accuracy.md.
 * `npx trickle bench lab [--in-vm]` (`npm run bench:lab`; root).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { release } from 'node:os';
import { join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import {
  binomialInterval,
  labDown,
  labUp,
  measureBulkGoodputBps,
  measureBurstDelivery,
  measureIdleRtt,
  measureRandomLoss,
  netemAvailable,
  symmetricLink,
  tcpPayloadEfficiency,
  type LinkBackendName,
  examples,
} from '@trickle/e2e';
import { runIfMain } from './entry.js';
import { BenchError } from './errors.js';
import { writeResults } from './results-file.js';

const checkout = resolve(import.meta.dirname, '..', '..');
const cases = [
  { rateBps: 6e6, rttMs: 40 },
  { rateBps: 20e6, rttMs: 20 },
  { rateBps: 0.7e6, rttMs: 300 },
];

/** One measured figure: a link, what was measured on it, and the figure as text. */
interface Cell {
  readonly link: string;
  readonly measure: 'idle RTT (error)' | 'bulk goodput' | 'random loss' | 'tail drop';
  readonly text: string;
}

function cellText(column: { readonly cells: readonly Cell[] }, link: string, measure: string): string {
  return column.cells.find((cell) => cell.link === link && cell.measure === measure)?.text ?? '';
}

/** One backend's figures, measured where this process runs. */
async function measureBackend(backend: LinkBackendName, where: string): Promise<Cell[]> {
  const cells: Cell[] = [];
  const progress = (what: string) => process.stderr.write(`${backend} on ${where}: ${what} ...\n`);
  progress("the path's own RTT (1 Gbit/s, 0 ms)");
  const path = await labUp('bacc', symmetricLink({ rateBps: 1e9, rttMs: 0 }), { backend });
  let pathRttMs: number;
  try {
    pathRttMs = (await measureIdleRtt(path)).trimmedMeanMs;
    cells.push({
      link: "1 Gbit/s, 0 ms (the path's own RTT)",
      measure: 'idle RTT (error)',
      text: `${pathRttMs.toFixed(2)} ms`,
    });
  } finally {
    await labDown('bacc');
  }
  for (const { rateBps, rttMs } of cases) {
    const link = `${rateBps / 1e6} Mbit/s, ${rttMs} ms`;
    progress(link);
    const lab = await labUp('bacc', symmetricLink({ rateBps, rttMs, bufferBdp: 2 }), { backend });
    try {
      const rtt = (await measureIdleRtt(lab)).trimmedMeanMs;
      // Measured after slow start (several seconds at 300 ms; longer than on the host in an emulated guest).
      const goodput = await measureBulkGoodputBps(
        lab,
        rttMs > 100 ? { durationMs: 15_000, fromMs: 5000 } : { durationMs: 10_000, fromMs: 3000 },
      );
      const expected = rateBps * tcpPayloadEfficiency;
      cells.push({
        link,
        measure: 'idle RTT (error)',
        text:
          `${rtt.toFixed(2)} ms ` +
          `(${(rtt - rttMs).toFixed(2)}; ${(rtt - rttMs - pathRttMs).toFixed(2)} beyond the ` +
          `path's own)`,
      });
      cells.push({
        link,
        measure: 'bulk goodput',
        text:
          `${(goodput / 1e6).toFixed(3)} Mbit/s ` +
          `(${((goodput / expected - 1) * 100).toFixed(1)}% of ${(expected / 1e6).toFixed(3)})`,
      });
    } finally {
      await labDown('bacc');
    }
  }
  const lossLink = '20 Mbit/s, 10 ms, loss 2%';
  progress(lossLink);
  const lossy = await labUp(
    'bacc',
    symmetricLink({ rateBps: 20e6, rttMs: 10, bufferBdp: 4, lossRate: 0.02, seed: 11 }),
    { backend },
  );
  try {
    const loss = await measureRandomLoss(lossy, 10_000, 400);
    const interval = binomialInterval(loss.link.offered, 0.02);
    cells.push({
      link: lossLink,
      measure: 'random loss',
      text:
        `the link dropped ${(loss.link.lossRate * 100).toFixed(2)}% of ${loss.link.offered} ` +
        `(99.9% interval ${(interval.low * 100).toFixed(2)}-${(interval.high * 100).toFixed(2)}%); ` +
        `end to end ${(loss.lossRate * 100).toFixed(2)}% of ${loss.sent}`,
    });
  } finally {
    await labDown('bacc');
  }
  const burstLink = `6 Mbit/s, 62.5 KB buffer (${Math.floor(62_500 / 1514)} frames fit)`;
  progress(`${burstLink}, a burst of 200 datagrams`);
  const shallow = await labUp('bacc', symmetricLink({ rateBps: 6e6, rttMs: 40, bufferBytes: 62_500 }), { backend });
  try {
    const burst = await measureBurstDelivery(shallow, 200);
    cells.push({
      link: burstLink,
      measure: 'tail drop',
      text:
        `burst of 200 x 1514 B: ${burst.received} delivered, ${burst.dropsAtBottleneck} ` +
        `tail-dropped at the bottleneck`,
    });
  } finally {
    await labDown('bacc');
  }
  return cells;
}

/** The netem figures from inside the guest kernel: this benchmark run there with --cells-out. */
async function measureNetemInGuest(): Promise<{ readonly kernel: string; readonly cells: readonly Cell[] }> {
  const cellsFile = join(checkout, '.cache', 'netem-vm', `lab-accuracy-${process.pid}.json`);
  const guest = spawn(
    join(checkout, 'scripts', 'netem-vm'),
    ['run', '--timeout', '2400', '--', process.execPath, import.meta.filename, '--cells-out', cellsFile],
    { cwd: checkout, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const [code] = (await once(guest, 'exit')) as [number | null];
  try {
    if (code !== 0)
      throw new BenchError(
        'BENCH_ERR_GUEST',
        `netem could not be measured in the guest kernel (scripts/netem-vm ` +
          `exited ${String(code)}; its output is above)`,
      );
    return JSON.parse(await readFile(cellsFile, 'utf8')) as { kernel: string; cells: Cell[] };
  } finally {
    await rm(cellsFile, { force: true });
  }
}

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench lab')
    .option(
      '--in-vm',
      'where this kernel has no netem, measure the netem backend inside a guest kernel ' +
        "that has it (scripts/netem-vm: Debian's kernel under qemu TCG; ~15 minutes)",
    )
    .addOption(
      new Option(
        '--cells-out <file>',
        'measure only netem, here, and write its figures to <file> (what --in-vm runs in the guest)',
      ).hideHelp(),
    )
    .addHelpText('after', examples('sudo npx trickle bench lab', 'sudo npx trickle bench lab --in-vm'))
    .parse(['node', 'bench', ...argv])
    .opts<{ inVm?: boolean; cellsOut?: string }>();
  const netem = netemAvailable();
  if (options.cellsOut !== undefined) {
    if (!netem.available)
      throw new BenchError('BENCH_ERR_MISSING_TOOL', `no netem on this kernel (${netem.reason ?? ''})`);
    await writeFile(
      options.cellsOut,
      JSON.stringify({ kernel: release(), cells: await measureBackend('netem', `guest ${release()}`) }),
    );
    return;
  }
  const here = `host ${release()}`;
  const columns: { readonly title: string; readonly cells: readonly Cell[] }[] = [
    { title: `delay line (${release()})`, cells: await measureBackend('delayline', here) },
  ];
  if (netem.available) columns.push({ title: `netem (${release()})`, cells: await measureBackend('netem', here) });
  else if (options.inVm === true) {
    const guest = await measureNetemInGuest();
    columns.push({ title: `netem (guest ${guest.kernel}, qemu TCG)`, cells: guest.cells });
  }
  // Side by side: one line per link and measure, one column per backend.
  const lines = [
    ...new Set(columns.flatMap((column) => column.cells.map((cell) => `${cell.link}\u0000${cell.measure}`))),
  ].map((key) => {
    const [link, measure] = key.split('\u0000') as [string, string];
    return `| ${link} | ${measure} | ${columns.map((column) => cellText(column, link, measure)).join(' | ')} |`;
  });
  const netemWhere = netem.available
    ? 'this kernel'
    : options.inVm === true
      ? 'a guest kernel (scripts/netem-vm), this kernel has none'
      : `nowhere: this kernel has none (${netem.reason ?? ''}); --in-vm measures it in a guest kernel`;
  const text = [
    `Command: \`npx trickle bench lab${options.inVm === true ? ' --in-vm' : ''}\` ` +
      `(root). The delay line on this kernel; netem on ${netemWhere}.`,
    '',
    'Idle RTT is the 10% trimmed mean of 20 pings (player to origin, after one that ' +
      'resolves ARP; ping prints whole ms from 100 ms',
    'on, and a median of whole numbers keeps their rounding); "the path\'s own RTT" is ' +
      'the same lab at 0 ms and 1 Gbit/s, what the',
    "namespaces, veths and the backend's own processing cost. Goodput is one bulk TCP " +
      'flow, measured at the player after slow start;',
    'the expected payload rate is the link rate x 1448/1514 (TCP payload per Ethernet frame).',
    ...(netem.available || options.inVm !== true
      ? []
      : [
          '',
          "In the guest (Debian's 6.1 kernel under qemu TCG, no KVM on this machine kind) " +
            'every packet and every process is emulated (10-40x',
          'slower than the host, by the platform notes, not this run): its own path RTT is ' +
            'larger, high packet rates (20 Mbit/s is ~1,650 data packets/s plus ACKs) are',
          'limited by the emulated CPU rather than the link, and a back-to-back burst leaves ' +
            'the emulated sender slower than the link drains',
          'it, so fewer packets meet a full buffer. Rows at low packet rates (6 and 0.7 ' +
            'Mbit/s, spaced loss probes) show what netem does.',
        ]),
    '',
    `| link | measure | ${columns.map((column) => column.title).join(' | ')} |`,
    `| --- | --- | ${columns.map(() => '---').join(' | ')} |`,
    ...lines,
    '',
  ];
  await writeResults('lab-accuracy.md', 'Lab accuracy', text);
}

await runIfMain(import.meta.url, main);
