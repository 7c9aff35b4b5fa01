/**
 * Test traffic for checking a lab, run inside a lab namespace:
 *   tcp-sink <port> <windowFromMs> <windowToMs> <binMs>: accept one connection, report goodput
 *     bins (from the connection's epoch ms) and the goodput over the window;
 *   tcp-source <host> <port> <durationMs> [pacingBytesPerSec|-] [blockBytes|-] [blockIntervalMs|-] [congestionControl]:
 *     send as fast as TCP allows, or kernel-paced, or in application-paced blocks;
 *   udp-sink <port> <quietMs>: count datagrams until none came for quietMs (a sender that starts
 *     late or sends slowly, on a loaded host or in an emulated guest, loses none to a sink's clock);
 *   udp-burst <host> <port> <count> <sizeBytes> [intervalUs]: send datagrams back to back (or spaced).
 */
import { createSocket } from 'node:dgram';
import { connect, createServer } from 'node:net';
import { setCongestionControl, setMaxPacingRate } from '@trickle/native';

const [role, ...args] = process.argv.slice(2);
const out = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

if (role === 'tcp-sink') {
  const [port, fromMs, toMs, binMs] = args.map(Number) as [number, number, number, number];
  const server = createServer((socket) => {
    const startedAtEpochMs = Date.now();
    const startMs = performance.now();
    const bins: number[] = [];
    let windowBytes = 0;
    socket.on('data', (chunk: Buffer) => {
      const atMs = performance.now() - startMs;
      const bin = Math.floor(atMs / binMs);
      bins[bin] = (bins[bin] ?? 0) + chunk.length;
      if (atMs >= fromMs && atMs < toMs) windowBytes += chunk.length;
    });
    socket.on('close', () => {
      out({ windowGoodputBps: (windowBytes * 8 * 1000) / (toMs - fromMs), binsBps: Array.from(bins, (b) => ((b ?? 0) * 8 * 1000) / binMs), startedAtEpochMs });
      server.close();
    });
    socket.on('error', () => undefined);
  });
  server.listen(port, () => out({ listening: true }));
} else if (role === 'tcp-source') {
  const [host, port, durationMs, pacing, blockBytes, blockIntervalMs, congestionControl] = args;
  const socket = connect(Number(port), host!, () => {
    // Per socket: a namespace may not make a restricted algorithm (cubic) its default.
    if (congestionControl !== undefined) setCongestionControl(socket, congestionControl);
    if (pacing !== undefined && pacing !== '-') setMaxPacingRate(socket, Number(pacing));
    const endMs = Date.now() + Number(durationMs);
    if (blockBytes !== undefined && blockBytes !== '-') {
      const block = Buffer.alloc(Number(blockBytes), 0x61);
      const timer = setInterval(() => {
        if (Date.now() >= endMs) {
          clearInterval(timer);
          socket.end();
          return;
        }
        socket.write(block);
      }, Number(blockIntervalMs));
      return;
    }
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pump = () => {
      while (Date.now() < endMs) if (!socket.write(chunk)) return;
      socket.end();
    };
    socket.on('drain', pump);
    pump();
  });
  socket.on('error', () => undefined);
} else if (role === 'udp-sink') {
  const [port, quietMs] = args.map(Number) as [number, number];
  const udp = createSocket('udp4');
  let count = 0;
  const report = () => {
    out({ received: count });
    udp.close();
  };
  // Nothing at all within a minute: report the zero rather than wait for ever.
  let quiet = setTimeout(report, 60_000);
  udp.on('message', () => {
    if (count++ > 0) quiet.refresh();
    else {
      clearTimeout(quiet);
      quiet = setTimeout(report, quietMs);
    }
  });
  udp.bind(port, () => out({ listening: true }));
} else if (role === 'udp-burst') {
  const [host, port, count, size, intervalUs] = args;
  const udp = createSocket('udp4');
  const payload = Buffer.alloc(Number(size), 0x62);
  let sent = 0;
  const spacingUs = Number(intervalUs ?? 0);
  const send = () => {
    udp.send(payload, Number(port), host!, () => {
      sent++;
      if (sent >= Number(count)) {
        out({ sent });
        udp.close();
      } else if (spacingUs > 0) {
        const until = process.hrtime.bigint() + BigInt(spacingUs * 1000);
        while (process.hrtime.bigint() < until);
        send();
      } else send();
    });
  };
  send();
} else {
  throw new Error(`unknown role ${role}`);
}
