/** The kernel's TCP counters, read from /proc/net/netstat's paired name and value lines. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listenOverflows, netstatCounter } from '../../bench/kernel-counters.js';

const sample = [
  'TcpExt: SyncookiesSent SyncookiesRecv ListenOverflows ListenDrops',
  'TcpExt: 526 0 11175 11175',
  'IpExt: InNoRoutes InTruncatedPkts',
  'IpExt: 0 3',
  '',
].join('\n');

describe('kernel counters', () => {
  it('finds a counter by group and name', () => {
    assert.equal(netstatCounter(sample, 'TcpExt', 'ListenOverflows'), 11175);
    assert.equal(netstatCounter(sample, 'TcpExt', 'SyncookiesSent'), 526);
    assert.equal(netstatCounter(sample, 'IpExt', 'InTruncatedPkts'), 3);
  });

  it('says undefined for a counter or group the kernel does not have', () => {
    assert.equal(netstatCounter(sample, 'TcpExt', 'NoSuchCounter'), undefined);
    assert.equal(netstatCounter(sample, 'MPTcpExt', 'ListenOverflows'), undefined);
  });

  it("reads this process's namespace", () => {
    const overflows = listenOverflows(process.pid);
    assert.ok(overflows !== undefined && Number.isInteger(overflows) && overflows >= 0, String(overflows));
  });
});
