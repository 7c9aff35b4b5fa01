/**
 * Where flow records go: a bounded in-memory ring for GET /api/flows, and optionally JSON lines
 * on stdout or appended to a file.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import type { FlowRecord } from './flow-record.js';

export class FlowLog {
  private readonly ring: (FlowRecord | undefined)[];
  private next = 0;
  private count = 0;
  private readonly sink: WriteStream | NodeJS.WriteStream | undefined;

  constructor(
    readonly keep: number,
    /** "none", "stdout" or a file path. */
    destination: string,
    onSinkError: (error: Error) => void,
  ) {
    this.ring = new Array<FlowRecord | undefined>(keep);
    if (destination === 'stdout') this.sink = process.stdout;
    else if (destination !== 'none') {
      const file = createWriteStream(destination, { flags: 'a' });
      file.on('error', onSinkError);
      this.sink = file;
    }
  }

  add(record: FlowRecord): void {
    if (this.keep > 0) {
      this.ring[this.next] = record;
      this.next = (this.next + 1) % this.keep;
      this.count = Math.min(this.count + 1, this.keep);
    }
    this.sink?.write(`${JSON.stringify(record)}\n`);
  }

  /** Records that started at or after `sinceEpochMs`, oldest first, at most `limit` (the newest ones). */
  since(sinceEpochMs: number, limit: number): FlowRecord[] {
    const records: FlowRecord[] = [];
    for (let i = 0; i < this.count; i++) {
      const record = this.ring[(this.next - this.count + i + this.keep) % this.keep]!;
      if (record.startedAtEpochMs >= sinceEpochMs) records.push(record);
    }
    return records.slice(Math.max(0, records.length - limit));
  }

  async close(): Promise<void> {
    const sink = this.sink;
    if (sink === undefined || sink === process.stdout) return;
    await new Promise<void>((resolve) => (sink as WriteStream).end(resolve));
  }
}
