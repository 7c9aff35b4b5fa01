/**
 * Run under a low descriptor limit (`prlimit --nofile=N:N node descriptor-reserve-child.js <file>`): opens
 * loopback connections, each with a file transfer, until a transfer is refused; prints what happened as JSON.
 */
import { readdirSync } from 'node:fs';
import { openFileSend, type FileSend } from '../../src/index.js';
import { connectedPair } from './loopback-pair.js';

const path = process.argv[2]!;
const transfers: FileSend[] = [];
const pairs: Awaited<ReturnType<typeof connectedPair>>[] = [];
let refused: { code?: string; syscall?: string } | undefined;
while (refused === undefined && pairs.length < 10_000) {
  const pair = await connectedPair();
  pairs.push(pair);
  try {
    transfers.push(openFileSend(pair.serverSide, path, 10));
  } catch (error) {
    const { code, syscall } = error as NodeJS.ErrnoException;
    refused = { code, syscall };
  }
}
const openAtRefusal = readdirSync('/proc/self/fd').length;
// Still room for viewers: a new connection is accepted after the refusal.
const accepted = await connectedPair().then(
  () => true,
  () => false,
);
for (const transfer of transfers) transfer.close();
process.stdout.write(`${JSON.stringify({ transfers: transfers.length, refused, openAtRefusal, accepted })}\n`);
process.exit(0);
