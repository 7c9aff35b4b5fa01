/**
 * Reading classic pcap files (as tcpdump writes them) into TCP packet records: enough of
 * Ethernet, IPv4 and TCP to follow flows. Pure: a Buffer in, records out.
 */
import { E2eError } from '../../errors.js';

export interface TcpPacket {
  /** Capture time in microseconds since the epoch. */
  readonly timeUs: number;
  readonly src: string;
  readonly dst: string;
  readonly srcPort: number;
  readonly dstPort: number;
  readonly seq: number;
  readonly ack: number;
  readonly flags: number;
  /** TCP payload bytes (from the IP total length, not the captured length). */
  readonly payloadBytes: number;
}

export const tcpFlags = { fin: 0x01, syn: 0x02, rst: 0x04, psh: 0x08, ack: 0x10 } as const;

const linkEthernet = 1;
const linkLinuxCooked = 113;

export function parsePcap(buffer: Buffer): TcpPacket[] {
  if (buffer.length < 24) throw new E2eError('E2E_ERR_CAPTURE', 'pcap file shorter than its header');
  const magic = buffer.readUInt32LE(0);
  let littleEndian: boolean;
  let nanoseconds = false;
  if (magic === 0xa1b2c3d4) littleEndian = true;
  else if (magic === 0xd4c3b2a1) littleEndian = false;
  else if (magic === 0xa1b23c4d) {
    littleEndian = true;
    nanoseconds = true;
  } else if (magic === 0x4d3cb2a1) {
    littleEndian = false;
    nanoseconds = true;
  } else throw new E2eError('E2E_ERR_CAPTURE', `not a pcap file (magic 0x${magic.toString(16)})`);
  const u32 = (offset: number) => (littleEndian ? buffer.readUInt32LE(offset) : buffer.readUInt32BE(offset));
  const linkType = u32(20);
  if (linkType !== linkEthernet && linkType !== linkLinuxCooked)
    throw new E2eError('E2E_ERR_CAPTURE', `unsupported pcap link type ${linkType}`);
  const packets: TcpPacket[] = [];
  let offset = 24;
  while (offset + 16 <= buffer.length) {
    const seconds = u32(offset);
    const fraction = u32(offset + 4);
    const captured = u32(offset + 8);
    const data = offset + 16;
    offset = data + captured;
    if (offset > buffer.length) break;
    const timeUs = seconds * 1e6 + (nanoseconds ? Math.floor(fraction / 1000) : fraction);
    let ip = data + 14;
    let etherType = captured >= 14 ? buffer.readUInt16BE(data + 12) : 0;
    if (linkType === linkLinuxCooked) {
      ip = data + 16;
      etherType = captured >= 16 ? buffer.readUInt16BE(data + 14) : 0;
    }
    if (etherType === 0x8100 && ip + 4 <= offset) {
      etherType = buffer.readUInt16BE(ip + 2);
      ip += 4;
    }
    if (etherType !== 0x0800 || ip + 20 > offset) continue;
    const ihl = (buffer[ip]! & 0x0f) * 4;
    if (buffer[ip + 9] !== 6 || ip + ihl + 20 > offset) continue;
    const totalLength = buffer.readUInt16BE(ip + 2);
    const tcp = ip + ihl;
    const dataOffset = (buffer[tcp + 12]! >> 4) * 4;
    packets.push({
      timeUs,
      src: `${buffer[ip + 12]}.${buffer[ip + 13]}.${buffer[ip + 14]}.${buffer[ip + 15]}`,
      dst: `${buffer[ip + 16]}.${buffer[ip + 17]}.${buffer[ip + 18]}.${buffer[ip + 19]}`,
      srcPort: buffer.readUInt16BE(tcp),
      dstPort: buffer.readUInt16BE(tcp + 2),
      seq: buffer.readUInt32BE(tcp + 4),
      ack: buffer.readUInt32BE(tcp + 8),
      flags: buffer[tcp + 13]!,
      payloadBytes: Math.max(0, totalLength - ihl - dataOffset),
    });
  }
  return packets;
}
