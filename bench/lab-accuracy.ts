/**
 * The lab's accuracy table: configured vs measured RTT, bulk goodput, random loss and tail drops,
 * on each backend this kernel has. Writes bench/results/lab-accuracy.md. `npm run bench:lab` (root).
 */
import { writeResults } from './results-file.js';
import { binomialInterval, labDown, labUp, measureBulkGoodputBps, measureBurstDelivery, measureIdleRttMs, measureRandomLoss, netemAvailable, symmetricLink, tcpPayloadEfficiency, type LinkBackendName } from '@trickle/e2e';

const rows: string[] = [];
const cases = [
  { rateBps: 6e6, rttMs: 40 },
  { rateBps: 20e6, rttMs: 20 },
  { rateBps: 0.7e6, rttMs: 300 },
];

async function main(): Promise<void> {
  const backends: LinkBackendName[] = netemAvailable().available ? ['delayline', 'netem'] : ['delayline'];
  for (const backend of backends) {
    for (const { rateBps, rttMs } of cases) {
      process.stderr.write(`${backend}: ${rateBps / 1e6} Mbit/s, ${rttMs} ms ...\n`);
      const lab = await labUp('bacc', symmetricLink({ rateBps, rttMs, bufferBdp: 2 }), { backend });
      try {
        const rtt = await measureIdleRttMs(lab);
        const goodput = await measureBulkGoodputBps(lab, { durationMs: rttMs > 100 ? 15_000 : 8000, fromMs: rttMs > 100 ? 5000 : 2000 });
        const expected = rateBps * tcpPayloadEfficiency;
        rows.push(`| ${backend} | ${rateBps / 1e6} Mbit/s, ${rttMs} ms | ${rtt.toFixed(2)} ms (${(rtt - rttMs).toFixed(2)}) | ${(goodput / 1e6).toFixed(3)} Mbit/s (${((goodput / expected - 1) * 100).toFixed(1)}% of ${(expected / 1e6).toFixed(3)}) | | |`);
      } finally {
        await labDown('bacc');
      }
    }
    const lossy = await labUp('bacc', symmetricLink({ rateBps: 20e6, rttMs: 10, bufferBdp: 4, lossRate: 0.02, seed: 11 }), { backend });
    try {
      const loss = await measureRandomLoss(lossy, 10_000, 400);
      const interval = binomialInterval(loss.sent, 0.02);
      rows.push(`| ${backend} | 20 Mbit/s, 10 ms, loss 2% | | | ${(loss.lossRate * 100).toFixed(2)}% of ${loss.sent} (99.9% interval ${(interval.low * 100).toFixed(2)}-${(interval.high * 100).toFixed(2)}%) | |`);
    } finally {
      await labDown('bacc');
    }
    const shallow = await labUp('bacc', symmetricLink({ rateBps: 6e6, rttMs: 40, bufferBytes: 62_500 }), { backend });
    try {
      const burst = await measureBurstDelivery(shallow, 200);
      rows.push(`| ${backend} | 6 Mbit/s, 62.5 KB buffer, burst of 200 x 1514 B | | | | ${burst.received} delivered, ${burst.dropsAtBottleneck} tail-dropped at the bottleneck (${Math.floor(62_500 / 1514)} fit the buffer) |`);
    } finally {
      await labDown('bacc');
    }
  }
  const lines = [
    `Command: \`npm run bench:lab\` (root). Backends run: ${backends.join(', ')}${backends.includes('netem') ? '' : ' (this kernel has no netem)'}.`,
    '',
    'Idle RTT is the median of 20 pings (player to origin, the first left out for ARP). Goodput is one bulk TCP flow, measured at the',
    'player after slow start; the expected payload rate is the link rate x 1448/1514 (TCP payload per Ethernet frame).',
    '',
    '| backend | link | idle RTT (error) | bulk goodput | random loss | tail drop |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ];
  await writeResults('lab-accuracy.md', 'Lab accuracy', lines);
}

await main();
