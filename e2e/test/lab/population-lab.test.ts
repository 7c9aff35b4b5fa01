/**
 * The population lab on the real kernel (root; CI runs it): 8 viewers, 4 drawn dc1-like and 4
 * dc2-like, each on its own link, one of them on a host of its own. Every link's RTT is read while
 * the other half of the population is flooded, every flood crossed its own viewer's queue and no
 * other, every queue sends at its link's rate, and a burst into each viewer's buffer is dropped at
 * that viewer's queue and nowhere else.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import {
  drawLinks,
  labDown,
  linkPopulation,
  measurePopulationAccuracy,
  populationStatus,
  populationUp,
  type AccessLink,
} from '../../src/index.js';
import { median } from '@trickle/player-sim';
import { delaylineLinksText, populationTcCommands } from '../../src/lab/population-lab.js';
import { skipUnless } from '../helpers/requirements.js';

const skip = skipUnless('the population lab test', { root: true });

describe('population lab: what it tells tc and the delay line', () => {
  const population = linkPopulation(
    [
      { rateBps: 6e6, rttMs: 40, bufferBytes: 60_000, lossRate: 0.01 },
      { rateBps: 0.5e6, rttMs: 300, bufferBytes: 30_000, lossRate: 0 },
    ],
    { source: 'test', seed: 1, uplinkRateBps: 100e6 },
  );

  it(
    'gives each viewer an HTB class at its own rate, a byte FIFO of its buffer and a ' +
      "filter in its address's hash bucket",
    () => {
      const down = populationTcCommands('ra', 'down', population);
      assert.ok(
        down.includes(
          'class add dev ra parent 1: classid 1:1 htb rate 100000000bit ceil 100000000bit ' +
            'burst 12500 cburst 12500 quantum 1514',
        ),
      );
      assert.ok(
        down.includes(
          'class add dev ra parent 1:1 classid 1:10 htb rate 6000000bit ceil 6000000bit burst ' +
            '3028 cburst 3028 quantum 1514',
        ),
      );
      assert.ok(down.includes('qdisc add dev ra parent 1:10 handle 10: bfifo limit 60000'));
      assert.ok(
        down.includes(
          'filter add dev ra parent 1: prio 1 protocol ip u32 ht 100:1: match ip dst 10.73.1.1/32 flowid 1:10',
        ),
      );
      assert.ok(
        down.includes(
          'filter add dev ra parent 1: prio 1 protocol ip u32 ht 100:2: match ip dst 10.73.1.2/32 flowid 1:11',
        ),
      );
      const up = populationTcCommands('ro', 'up', population);
      assert.ok(up.some((line) => line.includes('match ip src 10.73.0.0/16 hashkey mask 0x000000ff at 12 link 100:')));
      assert.ok(
        up.includes(
          'class add dev ro parent 1:1 classid 1:10 htb rate 1500000bit ceil 1500000bit burst ' +
            '3028 cburst 3028 quantum 1514',
        ),
      );
    },
  );

  it("gives the delay line each viewer's one-way delays in microseconds and its loss", () => {
    assert.equal(delaylineLinksText(population), '10.73.1.1 20000 20000 0.01 0\n10.73.1.2 150000 150000 0 0\n');
  });
});

describe('population lab on the kernel', { skip }, () => {
  const name = 'tpop';
  after(() => labDown(name));

  it(
    "measures every link at the population's load: RTT within 3 ms, rate within -10 % / +3 %, " +
      'flows on their own links, drops at the right queue',
    async (t) => {
      const population = linkPopulation([...drawLinks('dc1-like', 4, 1), ...drawLinks('dc2-like', 4, 2)], {
        source: 'dc1-like + dc2-like',
        seed: 1,
      });
      // Viewer 7 on a host of its own (as a browser is), the others in the shared player namespace.
      const lab = await populationUp(name, population, { ownHosts: [7] });
      assert.equal(lab.namespace({ viewer: 7 }), `trickle-${name}-v7`);
      assert.equal(lab.namespace({ viewer: 6 }), lab.namespace('player'));
      const accuracy = await measurePopulationAccuracy(lab, { durationMs: 10_000, fromMs: 4000, pings: 20 });
      const describe = (link: { viewer: number; rateBps: number; rttMs: number; bufferBytes: number }) =>
        `viewer ${link.viewer} (${(link.rateBps / 1e6).toFixed(2)} Mbit/s, ${link.rttMs} ms, ${link.bufferBytes} B)`;
      for (const link of accuracy.links)
        t.diagnostic(
          `${describe(link)}: RTT ${link.measuredRttMs.toFixed(2)} ms, echoes ${link.echoRttsMs.join(' ')}; ` +
            `queue sent ${(link.linkRateBps / link.rateBps).toFixed(4)} x the rate ` +
            `(${(link.linkRateRangeBps.low / link.rateBps).toFixed(4)}-${(link.linkRateRangeBps.high / link.rateBps).toFixed(4)})`,
        );
      for (const link of accuracy.links) {
        // Judged on the median of the 20 echoes (one each 200 ms): a stall only ever makes echoes late, and
        // the delay line (a user-space process, half the links flooded, a browser test beside it on two
        // cores) has stalls that hold every echo in flight at once. The 15 %-trimmed mean the benchmark
        // reports (to a tenth of a ms: trickle bench population) keeps 3 late echoes of 20 and failed
        // by chance even at 3 ms (the hunt: 27.3 ms for 22.8, seven echoes 6-136 ms late while a compile
        // ran beside it; CI before: 62.92 for 61.8 at 1 ms). The median fails by chance only when more
        // than half of the 4 s of echoes are over 3 ms late (stalls here last 10-300 ms);
        // 3 ms still catches a link with the wrong delay (the smallest one-way delay here is 9 ms).
        const medianRttMs = median(link.echoRttsMs);
        assert.ok(
          link.echoRttsMs.length >= 15 && Math.abs(medianRttMs - link.rttMs) <= 3,
          `${describe(link)}: RTT median ${medianRttMs} ms of ${link.echoRttsMs.length} echoes under load ` +
            `(${link.echoRttsMs.join(', ')} ms; trimmed mean ${link.measuredRttMs.toFixed(2)} ms)`,
        );
        // Every datagram the viewer received crossed its own queue, and nothing else did.
        assert.ok(
          Math.abs(link.queueFramesPerReceived - 1) <= 0.002,
          `${describe(link)}: its queue sent ${link.queueFramesPerReceived} frames per datagram it received`,
        );
        // Under a flood at 1.1x its rate the queue sends at the link's rate (frames with their headers):
        // judged where the queue held a backlog at both ends of the window. Where it did not, the flood
        // (a user-space sender, through the user-space delay line, beside a browser test on two cores)
        // fell behind, which says nothing of the link: counted below, not judged here.
        // Above its rate a queue never sends: judged on the lowest rate the readings allow (the window at the
        // longest its two `tc -s` calls allow, a frame straddling each edge), with 3 % for HTB's bucket and its
        // rate's granularity. Dated at one point, a reading a host stall held gave +4.3 % at 0.32 Mbit/s (the
        // hunt, once in 12 runs). Below, a backlog at both ends of the window does not prove one throughout:
        // a flood source starved of CPU lets the queue idle for moments (the hunt read -3.3 % once in 13
        // runs); -10 % on the highest rate the readings allow still fails a rate set wrong.
        const { low, high } = link.linkRateRangeBps;
        if (link.backlogged)
          assert.ok(
            low / link.rateBps - 1 <= 0.03 && high / link.rateBps - 1 >= -0.1,
            `${describe(link)}: its queue sent ${Math.round(link.linkRateBps)} bit/s ` +
              `(between ${Math.round(low)} and ${Math.round(high)} as the readings allow)`,
          );
        else t.diagnostic(`${describe(link)}: not backlogged through the window; sent ${link.linkRateBps} bit/s`);
        assert.equal(link.burst.dropsElsewhere, 0, `${describe(link)}: a burst to it dropped at other viewers' queues`);
        assert.equal(
          link.burst.dropsHere,
          link.burst.sent - link.burst.received,
          `${describe(link)}: ${link.burst.sent} sent, ${link.burst.received} ` +
            `received, ${link.burst.dropsHere} dropped at its queue`,
        );
        // At least what the buffer and bucket hold; at most that and what the link sent while the burst came in.
        assert.ok(
          link.burst.received >= link.burst.fits - 2 && link.burst.received <= link.burst.atMost + 2,
          `${describe(link)}: ${link.burst.received} of a burst got through its ` +
            `buffer, ${link.burst.fits}-${link.burst.atMost} fit`,
        );
      }
      // The flood loaded the links: most queues held a backlog through the window (each link is loaded in one round).
      const busy = accuracy.links.filter((link) => link.backlogged).length;
      assert.ok(
        busy >= accuracy.links.length / 2,
        `${busy} of ${accuracy.links.length} queues backlogged under the flood`,
      );
      // The loaded viewers' drops are their own: the status attributes frames to the links that carried them.
      const status = await populationStatus(lab);
      const byViewer = new Map(population.links.map((link: AccessLink) => [link.viewer, link]));
      for (const entry of status)
        assert.ok(
          entry.down.framesIn > 0 && entry.down.sentBytes > 0,
          `viewer ${entry.viewer} (${byViewer.get(entry.viewer)!.address}) carried nothing`,
        );
    },
  );
});
