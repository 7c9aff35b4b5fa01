/** Cutting a capture into responses, bursts and loss phases, on hand-built packets. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FlowRecord } from '@trickle/origin';
import { analyzeFlows, type DataPacket } from '../../src/lab/analysis/flows.js';
import type { TcpPacket } from '../../src/lab/analysis/pcap.js';
import { classifyLosses, responsesOfCapture, splitAtStarts, timeSequenceOf } from '../../src/experiment/responses.js';

const mss = 1448;
const packet = (timeUs: number, index: number, retransmission = false): DataPacket => ({
  timeUs,
  offset: index * mss,
  payloadBytes: mss,
  retransmission,
});

describe('responses of a capture', () => {
  it("cuts a connection at its responses' start times (packets before the first response belong to none)", () => {
    const packets = [packet(50, 0), packet(100, 1), packet(150, 2), packet(300, 3), packet(350, 4)];
    const slices = splitAtStarts(packets, [90, 300]);
    assert.deepEqual(
      slices.map((s) => s.map((p) => p.timeUs)),
      [
        [100, 150],
        [300, 350],
      ],
    );
  });

  it('classifies each loss: initial burst, ACK clocking, trailing ACKs', () => {
    const rttUs = 10_000;
    // 0-4 sent in the first RTT, 5-9 clocked out later; 2 is lost (initial burst), 7 is lost (ACK clocking),
    // 9 is lost and retransmitted after the last new data (trailing ACKs).
    const packets: DataPacket[] = [
      ...[0, 1, 2, 3, 4].map((i) => packet(i * 100, i)),
      ...[5, 6, 7, 8, 9].map((i) => packet(20_000 + i * 1000, i)),
      packet(27_500, 2, true),
      packet(28_500, 7, true),
      packet(60_000, 9, true),
    ].sort((a, b) => a.timeUs - b.timeUs);
    assert.deepEqual(classifyLosses(packets, rttUs), { initialBurst: 1, ackClocking: 1, trailingAcks: 1 });
    assert.deepEqual(classifyLosses([], rttUs), { initialBurst: 0, ackClocking: 0, trailingAcks: 0 });
  });

  it('matches captured packets to flow records by client port and time; bursts only from the throttling phase', () => {
    const startMs = 1_700_000_000_000;
    const tcp = (timeUs: number, seq: number, dstPort: number): TcpPacket => ({
      timeUs,
      src: '10.73.0.1',
      dst: '10.73.0.2',
      srcPort: 8080,
      dstPort,
      seq,
      ack: 0,
      flags: 0x18,
      payloadBytes: mss,
    });
    // Port 40000: startup burst of 6 packets within 1 ms at t=0, then throttled: 5 packets 0.2 ms apart at 1 s, then 3
    // spaced 5 ms.
    const times = [
      0, 100, 200, 300, 400, 500, 1_000_000, 1_000_200, 1_000_400, 1_000_600, 1_000_800, 1_010_000, 1_015_000,
      1_020_000,
    ];
    const packets = times.map((t, i) => tcp(startMs * 1000 + t, 1000 + i * mss, 40000));
    packets.push(tcp(startMs * 1000 + 5000, 1, 40001)); // another connection, no record
    const record = {
      id: 7,
      client: { address: '10.73.0.2', port: 40000 },
      startedAtEpochMs: startMs,
      startup: { durationMs: 900 },
      throttling: { bytes: 1 },
      minRttUs: 20_000,
      srttUs: 25_000,
    } as unknown as FlowRecord;
    const captures = responsesOfCapture(analyzeFlows(packets), [record], { address: '10.73.0.1', port: 8080 });
    assert.deepEqual([...captures.keys()], [7]);
    const capture = captures.get(7)!;
    assert.equal(capture.packets.length, 14);
    assert.deepEqual(capture.bursts, [6, 5]);
    assert.deepEqual(capture.throttledBursts, [5]);
    assert.equal(capture.retransmittedPackets, 0);
  });

  it(
    'draws a time-sequence graph: seconds and MB from the first packet, retransmissions ' +
      'kept, a zoom into throttling',
    () => {
      const packets = Array.from({ length: 1000 }, (_, i) => packet(1_000_000 + i * 10_000, i, i === 500));
      const graph = timeSequenceOf(packets, 1_000_000 + 2_000_000, { maxPoints: 100, zoomSec: 1 });
      assert.equal(graph.throttlingStartSec, 2);
      assert.ok(graph.points.length <= 101);
      assert.deepEqual(graph.points[0], { timeSec: 0, offsetMB: 0, retransmission: false });
      assert.ok(graph.points.some((p) => p.retransmission && p.timeSec === 5));
      // Throttling from 2 s to 9.99 s: the zoom starts a quarter in (at most 5 s): 2 + 1.9975 s, for 1 s, every packet.
      assert.equal(graph.zoom.length, 100);
      assert.ok(Math.abs(graph.zoom[0]!.timeSec - 4) < 0.011);
      // Throttling begins after the last packet (the bytes were already in flight): the zoom shows the end instead.
      const late = timeSequenceOf(packets.slice(0, 50), 1_000_000 + 60_000_000, { zoomSec: 0.1 });
      assert.equal(late.zoom.at(-1)!.timeSec, 0.49);
      assert.ok(
        late.zoom.length >= 10 && late.zoom.every((p) => p.timeSec >= 0.385),
        `zoom: ${late.zoom.map((p) => p.timeSec).join(', ')}`,
      );
    },
  );
});
