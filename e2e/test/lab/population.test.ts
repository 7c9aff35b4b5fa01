import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  describePopulation,
  drawLinks,
  linkDistributions,
  linkPopulation,
  maxViewers,
  parseLinksCsv,
  viewerAddress,
} from '../../src/index.js';

const isPopulationError = (error: unknown) => (error as { code?: string }).code === 'E2E_ERR_POPULATION';

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

describe('link populations', () => {
  it('draws the same links for the same seed and other links for another', () => {
    assert.deepEqual(drawLinks('dc1-like', 50, 7), drawLinks('dc1-like', 50, 7));
    assert.notDeepEqual(drawLinks('dc1-like', 50, 7), drawLinks('dc1-like', 50, 8));
  });

  it("fits dc1-like to the paper's Table 2 bandwidth buckets and its RTT and buffer descriptions", () => {
    const links = drawLinks('dc1-like', 20_000, 1);
    const share = (low: number, high: number) =>
      links.filter((l) => l.rateBps >= low * 1e6 && l.rateBps < high * 1e6).length / links.length;
    // Table 2, DC1: 1 %, 3 %, 10 %, 28 %, 35 %, 23 % (three standard errors of 20,000 draws: < 1 point)
    for (const [low, high, expected] of [
      [0, 0.5, 0.01],
      [0.5, 1, 0.03],
      [1, 2, 0.1],
      [2, 4, 0.28],
      [4, 8, 0.35],
      [8, 100, 0.23],
    ] as const) {
      assert.ok(
        Math.abs(share(low, high) - expected) < 0.01,
        `${low}-${high} Mbit/s: ${share(low, high)} vs ${expected}`,
      );
    }
    const medianRate = quantile(
      links.map((l) => l.rateBps),
      0.5,
    );
    assert.ok(medianRate > 4e6 && medianRate < 6e6, `median ${medianRate}`);
    const medianRtt = quantile(
      links.map((l) => l.rttMs),
      0.5,
    );
    assert.ok(Math.abs(medianRtt - 45) < 2, `median RTT ${medianRtt}`);
    const bufferMs = links.map((l) => (l.bufferBytes * 8 * 1000) / l.rateBps);
    assert.ok(Math.abs(quantile(bufferMs, 0.5) - 60) < 3, `median buffer ${quantile(bufferMs, 0.5)} ms`);
    assert.ok(links.every((l) => l.lossRate === 0 && l.rttMs >= 10 && l.rttMs <= 300 && l.bufferBytes >= 2 * 1514));
  });

  it('makes dc2-like slow and over-buffered: median ~0.7 Mbit/s, a fifth of buffers past a second with the RTT', () => {
    const links = drawLinks('dc2-like', 20_000, 2);
    const medianRate = quantile(
      links.map((l) => l.rateBps),
      0.5,
    );
    assert.ok(medianRate > 0.55e6 && medianRate < 0.8e6, `median ${medianRate}`);
    assert.ok(Math.abs(links.filter((l) => l.rateBps < 0.5e6).length / links.length - 0.39) < 0.015);
    const fullQueueRttMs = links.map((l) => l.rttMs + (l.bufferBytes * 8 * 1000) / l.rateBps);
    const overOneSecond = fullQueueRttMs.filter((ms) => ms > 1000).length / links.length;
    assert.ok(overOneSecond > 0.15 && overOneSecond < 0.35, `${overOneSecond} over 1 s`);
    assert.ok(links.every((l) => l.rttMs >= 60 && l.rttMs <= 800));
  });

  it('refuses an unknown distribution and a population size out of range, with the names it knows', () => {
    assert.throws(
      () => drawLinks('dc3-like', 10, 1),
      (error: Error) => isPopulationError(error) && error.message.includes(Object.keys(linkDistributions).join(', ')),
    );
    assert.throws(() => drawLinks('dc1-like', 0, 1), isPopulationError);
    assert.throws(() => drawLinks('dc1-like', maxViewers + 1, 1), isPopulationError);
  });

  it('reads CSV rows with units, any column order, comments and an optional loss column', () => {
    const links = parseLinksCsv(
      '# viewers of a test\nrtt, rate, buffer, loss\n40ms, 6mbit, 64kb, 0.5%\n0.3s,700kbit,20000,\n',
    );
    assert.deepEqual(links, [
      { rateBps: 6e6, rttMs: 40, bufferBytes: 64_000, lossRate: 0.005 },
      { rateBps: 7e5, rttMs: 300, bufferBytes: 20_000, lossRate: 0 },
    ]);
    // A buffer smaller than two frames is raised, as for a single link.
    assert.equal(parseLinksCsv('rate,rtt,buffer\n1mbit,10ms,100\n')[0]!.bufferBytes, 2 * 1514);
  });

  it('names the row and the column of a bad CSV', () => {
    assert.throws(
      () => parseLinksCsv('rate,rtt\n6mbit,40ms\n', 'links.csv'),
      (error: Error) => isPopulationError(error) && /links\.csv row 1 has no "buffer"/.test(error.message),
    );
    assert.throws(
      () => parseLinksCsv('rate,rtt,buffer\n6mbit,40ms,64kb\nfast,40ms,64kb\n', 'links.csv'),
      (error: Error) => isPopulationError(error) && /links\.csv row 2: rate "fast"/.test(error.message),
    );
    assert.throws(() => parseLinksCsv('rate,rtt,buffer\n'), isPopulationError);
    assert.throws(() => parseLinksCsv('rate,rtt,buffer\n"6mbit,40ms,64kb\n'), isPopulationError);
  });

  it('gives viewer i its own address and link, the RTT split evenly, the uplink a quarter of the downlink', () => {
    assert.equal(viewerAddress(0), '10.73.1.1');
    assert.equal(viewerAddress(253), '10.73.1.254');
    assert.equal(viewerAddress(254), '10.73.2.1');
    assert.throws(() => viewerAddress(maxViewers), isPopulationError);
    const population = linkPopulation(parseLinksCsv('rate,rtt,buffer\n8mbit,40ms,100kb\n0.5mbit,200ms,50kb\n'), {
      source: 'csv:test',
      seed: 3,
    });
    assert.equal(population.uplinkRateBps, 1e9);
    const [fast, slow] = population.links;
    assert.deepEqual(fast, {
      viewer: 0,
      address: '10.73.1.1',
      down: { rateBps: 8e6, delayMs: 20, lossRate: 0, bufferBytes: 100_000 },
      up: { rateBps: 2e6, delayMs: 20, lossRate: 0, bufferBytes: 25_000 },
    });
    // 0.5 Mbit/s: the uplink floor of 256 kbit/s, with the same 0.8 s of buffer.
    assert.deepEqual(slow!.up, { rateBps: 256_000, delayMs: 100, lossRate: 0, bufferBytes: 25_600 });
    assert.match(describePopulation(population), /^2 viewers from csv:test \(seed 3\)/);
  });
});
