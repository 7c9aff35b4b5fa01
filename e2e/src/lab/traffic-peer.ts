/**
 * Test traffic for checking a lab, run inside a lab namespace:
 *   tcp-sink <port> <windowFromMs> <windowToMs> <binMs>: accept one connection, report goodput
 *     bins (from the connection's epoch ms) and the goodput over the window;
 *   tcp-source <host> <port> <durationMs> [pacingBytesPerSec|-] [blockBytes|-] [blockIntervalMs|-] [congestionControl]:
 *     send as fast as TCP allows, or kernel-paced, or in application-paced blocks;
 *   tcp-sinks <port> <windowFromMs> <windowToMs> <connections>: accept that many connections (a
 *     population's viewers, one each), report each one's goodput over the window and its bytes by
 *     its local address at the window's end and close it, exit after the last;
 *   tcp-sources <port> <durationMs> <host>[,<host>...] [congestionControl]: one bulk flow to each
 *     host at once, reset at the end (a slow link's send buffer would otherwise drain for seconds);
 *   udp-floods <port> <durationMs> <sizeBytes> <host>=<bitsPerSec>[,...]: datagrams to each host
 *     at its own rate (in 2 ms steps), for a link's queue that never empties;
 *   udp-sinks <port> <quietMs> <address>[,...]: a socket bound to each address (a population's
 *     viewers), report each one's datagrams, bytes and receive-buffer drops once none came for quietMs;
 *   udp-sink <port> <quietMs>: count datagrams until none came for quietMs (a sender that starts
 *     late or sends slowly, on a loaded host or in an emulated guest, loses none to a sink's clock);
 *   udp-burst <host> <port> <count> <sizeBytes> [intervalUs]: send datagrams back to back (or spaced),
 *     report how many and how long they took.
 */
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { setCongestionControl, setMaxPacingRate } from '@trickle/native';

const [role, ...args] = process.argv.slice(2);

/** Receive-buffer drops of this namespace's UDP sockets by local `address:port`, from /proc/net/udp. */
function udpSocketDrops(): Map<string, number> {
  const drops = new Map<string, number>();
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = /^([0-9A-F]{8}):([0-9A-F]{4})$/.exec(fields[1] ?? '');
    if (local === null || fields.length < 13) continue;
    // The address is the kernel's 32-bit word in host order (little-endian here): its bytes reversed.
    const address = Buffer.from(local[1]!, 'hex').reverse().join('.');
    drops.set(`${address}:${Number.parseInt(local[2]!, 16)}`, Number(fields[12]));
  }
  return drops;
}
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
      out({
        windowGoodputBps: (windowBytes * 8 * 1000) / (toMs - fromMs),
        binsBps: Array.from(bins, (b) => ((b ?? 0) * 8 * 1000) / binMs),
        startedAtEpochMs,
      });
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
} else if (role === 'tcp-sinks') {
  const [port, fromMs, toMs, connections] = args.map(Number) as [number, number, number, number];
  let reported = 0;
  const server = createServer((socket) => {
    const startMs = performance.now();
    const localAddress = socket.localAddress;
    let windowBytes = 0;
    let totalBytes = 0;
    socket.on('data', (chunk: Buffer) => {
      const atMs = performance.now() - startMs;
      totalBytes += chunk.length;
      if (atMs >= fromMs && atMs < toMs) windowBytes += chunk.length;
    });
    // Reported at the window's end, not at the close: the sender's reset can be tail-dropped in a full queue.
    setTimeout(() => {
      out({ localAddress, windowGoodputBps: (windowBytes * 8 * 1000) / (toMs - fromMs), totalBytes });
      socket.destroy();
      if (++reported === connections) server.close();
    }, toMs);
    socket.on('error', () => undefined);
  });
  server.listen(port, '0.0.0.0', () => out({ listening: true }));
} else if (role === 'tcp-sources') {
  const [port, durationMs, hosts, congestionControl] = args;
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  for (const host of hosts!.split(',')) {
    const socket = connect(Number(port), host, () => {
      if (congestionControl !== undefined) setCongestionControl(socket, congestionControl);
      const endMs = Date.now() + Number(durationMs);
      const pump = () => {
        while (Date.now() < endMs) if (!socket.write(chunk)) return;
        socket.destroy();
      };
      socket.on('drain', pump);
      setTimeout(() => socket.destroy(), Number(durationMs) + 100);
      pump();
    });
    socket.on('error', () => undefined);
  }
} else if (role === 'udp-floods') {
  const [port, durationMs, size, targets] = args;
  const udp = createSocket('udp4');
  const payload = Buffer.alloc(Number(size), 0x63);
  const frameBits = (Number(size) + 42) * 8;
  const flows = targets!.split(',').map((target) => {
    const [host, rate] = target.split('=');
    return { host: host!, datagramsPerMs: Number(rate) / frameBits / 1000, owed: 0, sent: 0 };
  });
  const startedMs = performance.now();
  let lastMs = startedMs;
  const timer = setInterval(() => {
    const nowMs = performance.now();
    if (nowMs - startedMs >= Number(durationMs)) {
      clearInterval(timer);
      out({ sent: Object.fromEntries(flows.map((f) => [f.host, f.sent])) });
      udp.close();
      return;
    }
    for (const flow of flows) {
      flow.owed += flow.datagramsPerMs * (nowMs - lastMs);
      for (; flow.owed >= 1; flow.owed--, flow.sent++) udp.send(payload, Number(port), flow.host);
    }
    lastMs = nowMs;
  }, 2);
} else if (role === 'udp-sinks') {
  const [port, quietMs, addresses] = args;
  const counts = new Map<string, { datagrams: number; bytes: number }>();
  let quiet: NodeJS.Timeout | undefined;
  const sockets = addresses!.split(',').map((address) => {
    counts.set(address, { datagrams: 0, bytes: 0 });
    const socket = createSocket('udp4');
    socket.on('message', (message) => {
      const count = counts.get(address)!;
      count.datagrams++;
      count.bytes += message.length;
      quiet?.refresh();
    });
    return new Promise<ReturnType<typeof createSocket>>((resolve) =>
      socket.bind(Number(port), address, () => resolve(socket)),
    );
  });
  const bound = await Promise.all(sockets);
  out({ listening: true });
  const report = () => {
    // What each socket's receive buffer dropped (a sink starved of CPU on a loaded host): the kernel's
    // count, so a datagram the link delivered is told from one it did not.
    const drops = udpSocketDrops();
    out({
      received: Object.fromEntries(
        [...counts].map(([address, count]) => [address, { ...count, drops: drops.get(`${address}:${port}`) ?? 0 }]),
      ),
    });
    for (const socket of bound) socket.close();
  };
  // Nothing within a minute: report the zeros rather than wait for ever.
  quiet = setTimeout(report, 60_000);
  const firstMessage = () => {
    clearTimeout(quiet);
    quiet = setTimeout(report, Number(quietMs));
    for (const socket of bound) socket.off('message', firstMessage);
  };
  for (const socket of bound) socket.on('message', firstMessage);
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
  const startedNs = process.hrtime.bigint();
  const send = () => {
    udp.send(payload, Number(port), host!, () => {
      sent++;
      if (sent >= Number(count)) {
        // How long the burst took to leave: a link drains for that long while it arrives.
        out({ sent, elapsedUs: Number((process.hrtime.bigint() - startedNs) / 1000n) });
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
