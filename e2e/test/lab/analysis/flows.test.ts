import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  analyzeFlows,
  burstShareAtMost,
  packetShareInBurstsOver,
  detectBursts,
  parsePcap,
  queueingDelaysMs,
  type TcpPacket,
} from '../../../src/index.js';

function packet(timeUs: number, seq: number, payloadBytes = 1448, src = '10.73.0.1'): TcpPacket {
  return { timeUs, src, dst: '10.73.0.2', srcPort: 80, dstPort: 40000, seq, ack: 1, flags: 0x10, payloadBytes };
}

/** A pcap file (Ethernet, microseconds) holding the given IPv4/TCP packets, built by hand. */
function pcapOf(packets: readonly TcpPacket[]): Buffer {
  const header = Buffer.alloc(24);
  header.writeUInt32LE(0xa1b2c3d4, 0);
  header.writeUInt16LE(2, 4);
  header.writeUInt16LE(4, 6);
  header.writeUInt32LE(65535, 16);
  header.writeUInt32LE(1, 20);
  const records = packets.map((p) => {
    const frame = Buffer.alloc(14 + 20 + 20);
    frame.writeUInt16BE(0x0800, 12);
    frame[14] = 0x45;
    frame.writeUInt16BE(20 + 20 + p.payloadBytes, 16);
    frame[23] = 6;
    p.src.split('.').forEach((octet, i) => (frame[26 + i] = Number(octet)));
    p.dst.split('.').forEach((octet, i) => (frame[30 + i] = Number(octet)));
    frame.writeUInt16BE(p.srcPort, 34);
    frame.writeUInt16BE(p.dstPort, 36);
    frame.writeUInt32BE(p.seq, 38);
    frame.writeUInt32BE(p.ack, 42);
    frame[46] = 0x50;
    frame[47] = p.flags;
    const record = Buffer.alloc(16);
    record.writeUInt32LE(Math.floor(p.timeUs / 1e6), 0);
    record.writeUInt32LE(p.timeUs % 1e6, 4);
    record.writeUInt32LE(frame.length, 8);
    record.writeUInt32LE(14 + 20 + 20 + p.payloadBytes, 12);
    return Buffer.concat([record, frame]);
  });
  return Buffer.concat([header, ...records]);
}

describe('burst detection (Blanton et al.: >= 4 packets, gaps <= 1 ms)', () => {
  it('finds exactly the expected bursts in synthetic timings', () => {
    // 5 packets 100 us apart, a 5 ms pause, 3 packets (too few), a pause, 45 packets (a 64 kB write), 1 alone.
    const times = [
      0,
      100,
      200,
      300,
      400,
      5400,
      5500,
      5600,
      20_000,
      ...Array.from({ length: 45 }, (_, i) => 30_000 + i * 120),
      60_000,
    ];
    assert.deepEqual(detectBursts(times), [5, 45]);
    assert.deepEqual(detectBursts([0, 1000, 2000, 3000]), [4], 'a gap of exactly 1 ms still counts');
    assert.deepEqual(detectBursts([0, 1001, 2002, 3003]), []);
    assert.deepEqual(detectBursts([]), []);
    assert.deepEqual(detectBursts([0, 10, 20], { gapUs: 1000, minPackets: 2 }), [3]);
  });

  it('shares and queueing delays', () => {
    assert.equal(burstShareAtMost([4, 5, 45, 10], 10), 0.75);
    assert.equal(burstShareAtMost([], 10), 1);
    // One 45-packet write whole, one split by a stall into nine trains: by count 9 of 10 bursts are small, by
    // packets half are in a large one.
    assert.equal(packetShareInBurstsOver([45, 5, 5, 5, 5, 5, 5, 5, 5, 5], 10), 0.5);
    assert.equal(packetShareInBurstsOver([11, 10], 10), 11 / 21);
    assert.equal(packetShareInBurstsOver([], 10), 0);
    assert.deepEqual(queueingDelaysMs([40, 45, 41, 80]), [0, 5, 1, 40]);
  });
});

describe('flow analysis from a pcap', () => {
  it('parses the pcap and marks retransmissions by sequence', () => {
    const base = 4_294_960_000; // wraps past 2^32 inside the flow
    const packets = [
      packet(1_000_000, base),
      packet(1_000_100, base + 1448),
      packet(1_000_200, (base + 2896) % 2 ** 32),
      packet(1_000_300, (base + 4344) % 2 ** 32),
      packet(1_050_000, base + 1448),
      packet(1_100_000, (base + 5792) % 2 ** 32),
      packet(1_100_050, 1, 0, '10.73.0.2'),
    ];
    const parsed = parsePcap(pcapOf(packets));
    assert.equal(parsed.length, 7);
    assert.deepEqual(parsed[2], packets[2]);
    const [flow] = analyzeFlows(parsed);
    assert.equal(flow!.flow, '10.73.0.1:80>10.73.0.2:40000');
    assert.equal(flow!.dataPackets, 6);
    assert.equal(flow!.retransmittedPackets, 1);
    assert.equal(flow!.bytes, 5 * 1448, 'unique bytes: the retransmission adds none');
    assert.deepEqual(flow!.bursts, [4]);
    assert.ok(Math.abs(flow!.goodputBps - (5 * 1448 * 8) / 0.1) < 1);
  });

  it('rejects files that are not pcap', () => {
    assert.throws(
      () => parsePcap(Buffer.from('hello world, not a capture')),
      (e: unknown) => (e as { code?: string }).code === 'E2E_ERR_CAPTURE',
    );
  });
});
