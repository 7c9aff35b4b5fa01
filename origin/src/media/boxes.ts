/**
 * A careful ISO-BMFF box reader.
 *
 * Why not mp4box.js: the index needs a handful of boxes (moov sample tables, moof/tfhd/tfdt/trun)
 * from hundreds of files, read by header scanning without pulling `mdat` payloads into memory.
 * mp4box.js is built around feeding whole ArrayBuffers into a streaming parser that keeps what it
 * reads; for this job a bounds-checked reader of ~200 lines is smaller, faster and lets every
 * malformed size be reported with the file and offset. ffprobe cross-checks it in the tests.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { OriginError } from '../errors.js';

/** Bytes of a file: `sizeBytes` bytes from `offset`. */
export interface ByteSpan {
  readonly offset: number;
  readonly sizeBytes: number;
}

export interface Box {
  readonly type: string;
  /** Offset of the box's first header byte within the buffer or file. */
  readonly start: number;
  /** Offset of the payload (after size, type, largesize and usertype). */
  readonly payloadStart: number;
  /** Offset one past the box's last byte. */
  readonly end: number;
}

export class BoxReader {
  constructor(
    readonly buffer: Buffer,
    /** Name used in error messages, usually the file path. */
    readonly source: string,
  ) {}

  corrupt(message: string, offset: number): OriginError {
    return new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${this.source}: ${message} at byte ${offset}`, {
      file: this.source,
      offset,
    });
  }

  need(offset: number, length: number, limit: number): void {
    if (offset < 0 || offset + length > limit || offset + length > this.buffer.length) {
      throw this.corrupt(`truncated data (need ${length} bytes)`, offset);
    }
  }

  u8(offset: number, limit: number): number {
    this.need(offset, 1, limit);
    return this.buffer.readUInt8(offset);
  }

  u16(offset: number, limit: number): number {
    this.need(offset, 2, limit);
    return this.buffer.readUInt16BE(offset);
  }

  u32(offset: number, limit: number): number {
    this.need(offset, 4, limit);
    return this.buffer.readUInt32BE(offset);
  }

  i32(offset: number, limit: number): number {
    this.need(offset, 4, limit);
    return this.buffer.readInt32BE(offset);
  }

  u64(offset: number, limit: number): number {
    this.need(offset, 8, limit);
    const value = this.buffer.readBigUInt64BE(offset);
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw this.corrupt('64-bit value beyond 2^53', offset);
    return Number(value);
  }

  /** Reads the box header at `offset`; `limit` is the end of the enclosing box or buffer. */
  boxAt(offset: number, limit: number): Box {
    const size32 = this.u32(offset, limit);
    const type = this.buffer.toString('latin1', offset + 4, offset + 8);
    this.need(offset + 4, 4, limit);
    let headerSize = 8;
    let size: number;
    if (size32 === 1) {
      size = this.u64(offset + 8, limit);
      headerSize = 16;
    } else if (size32 === 0) {
      size = limit - offset;
    } else {
      size = size32;
    }
    if (type === 'uuid') headerSize += 16;
    if (size < headerSize || offset + size > limit) {
      throw this.corrupt(`box "${printable(type)}" declares ${size} bytes, which does not fit its parent`, offset);
    }
    return { type, start: offset, payloadStart: offset + headerSize, end: offset + size };
  }

  /** Children of a container whose children start at `start` and end at `end`. */
  *children(start: number, end: number): Generator<Box> {
    let offset = start;
    while (offset + 8 <= end) {
      const box = this.boxAt(offset, end);
      yield box;
      offset = box.end;
    }
  }

  childrenOf(box: Box): Generator<Box> {
    return this.children(box.payloadStart, box.end);
  }

  find(parent: Box, type: string): Box | undefined {
    for (const child of this.childrenOf(parent)) if (child.type === type) return child;
    return undefined;
  }

  findAll(parent: Box, type: string): Box[] {
    const found: Box[] = [];
    for (const child of this.childrenOf(parent)) if (child.type === type) found.push(child);
    return found;
  }

  /** Follows a path of box types below `parent`, e.g. `['mdia', 'minf', 'stbl']`. */
  path(parent: Box, types: readonly string[]): Box | undefined {
    let current: Box | undefined = parent;
    for (const type of types) {
      if (current === undefined) return undefined;
      current = this.find(current, type);
    }
    return current;
  }

  require(parent: Box, types: readonly string[]): Box {
    const box = this.path(parent, types);
    if (box === undefined) throw this.corrupt(`missing ${[parent.type, ...types].join('/')}`, parent.start);
    return box;
  }

  /** Version and flags of a FullBox. */
  fullBoxHeader(box: Box): { version: number; flags: number } {
    const word = this.u32(box.payloadStart, box.end);
    return { version: word >>> 24, flags: word & 0xffffff };
  }

  /** The whole buffer seen as one container, so top-level boxes are its children. */
  root(): Box {
    return { type: 'file', start: 0, payloadStart: 0, end: this.buffer.length };
  }
}

function printable(type: string): string {
  return /^[\x20-\x7e]{4}$/.test(type) ? type : JSON.stringify(type);
}

export interface TopLevelBox {
  readonly type: string;
  readonly start: number;
  readonly sizeBytes: number;
}

/**
 * A media file open for the index: positional reads through a read-ahead window (the box headers
 * of consecutive segments of one file are read with a few system calls, not one per header), the
 * top-level boxes of any span listed by their headers only, so large `mdat` payloads are never read.
 */
export class MediaFileReader {
  private window: Buffer = Buffer.alloc(0);
  private windowStart = 0;

  private constructor(
    private readonly handle: FileHandle,
    readonly path: string,
    readonly sizeBytes: number,
  ) {}

  static async open(path: string): Promise<MediaFileReader> {
    const handle = await open(path, 'r');
    try {
      return new MediaFileReader(handle, path, (await handle.stat()).size);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async close(): Promise<void> {
    await this.handle.close();
  }

  corrupt(message: string, offset: number): OriginError {
    return corruptFile(this.path, message, offset);
  }

  /**
   * `length` bytes at `offset` (fewer only at the file's end). Small reads are served from a 64 kB read-ahead window.
   */
  async read(offset: number, length: number): Promise<Buffer> {
    if (offset >= this.windowStart && offset + length <= this.windowStart + this.window.length) {
      return this.window.subarray(offset - this.windowStart, offset - this.windowStart + length);
    }
    const wanted = Math.max(0, Math.min(length, this.sizeBytes - offset));
    if (wanted > readAheadBytes) return this.readDirect(offset, wanted);
    this.window = await this.readDirect(offset, Math.min(readAheadBytes, this.sizeBytes - offset));
    this.windowStart = offset;
    return this.window.subarray(0, wanted);
  }

  private async readDirect(offset: number, length: number): Promise<Buffer> {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await this.handle.read(buffer, 0, length, offset);
    return bytesRead === length ? buffer : buffer.subarray(0, bytesRead);
  }

  /** The top-level boxes of `span` (the whole file by default), from their headers alone. */
  async boxes(
    span: { readonly offset: number; readonly sizeBytes: number } = { offset: 0, sizeBytes: this.sizeBytes },
  ): Promise<TopLevelBox[]> {
    const end = span.offset + span.sizeBytes;
    if (end > this.sizeBytes)
      throw this.corrupt(
        `the range ${span.offset}-${end - 1} runs past the end of the ${this.sizeBytes}-byte file`,
        span.offset,
      );
    const boxes: TopLevelBox[] = [];
    let offset = span.offset;
    while (offset < end) {
      const header = await this.read(offset, 16);
      if (header.length < 8 || offset + 8 > end) throw this.corrupt('truncated box header', offset);
      const size32 = header.readUInt32BE(0);
      const type = header.toString('latin1', 4, 8);
      let sizeBytes = size32;
      if (size32 === 1) {
        if (header.length < 16) throw this.corrupt('truncated 64-bit box size', offset);
        const large = header.readBigUInt64BE(8);
        sizeBytes = large > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(large);
      } else if (size32 === 0) {
        sizeBytes = end - offset;
      }
      if (sizeBytes < 8 || offset + sizeBytes > end) {
        throw this.corrupt(
          `top-level box "${printable(type)}" of ${sizeBytes} bytes runs past the end of ` +
            (span.offset === 0 && end === this.sizeBytes
              ? `the ${this.sizeBytes}-byte file`
              : `the range ${span.offset}-${end - 1}`),
          offset,
        );
      }
      boxes.push({ type, start: offset, sizeBytes });
      offset += sizeBytes;
    }
    return boxes;
  }

  /** The whole of each listed box, in order. */
  async boxBytes(boxes: readonly TopLevelBox[]): Promise<Buffer[]> {
    const buffers: Buffer[] = [];
    for (const box of boxes) {
      const buffer = await this.read(box.start, box.sizeBytes);
      if (buffer.length !== box.sizeBytes) throw this.corrupt(`short read of box "${box.type}"`, box.start);
      buffers.push(buffer);
    }
    return buffers;
  }
}

const readAheadBytes = 64 * 1024;

/** Runs `task` with the file open, and closes it whatever happens. */
export async function withMediaFile<T>(path: string, task: (file: MediaFileReader) => Promise<T>): Promise<T> {
  const file = await MediaFileReader.open(path);
  try {
    return await task(file);
  } finally {
    await file.close();
  }
}

/**
 * Lists a file's top-level boxes by reading only their headers, so large `mdat` payloads are
 * never read. Then `readBoxes` fetches the few boxes the caller wants.
 */
export async function scanTopLevelBoxes(path: string): Promise<{ boxes: TopLevelBox[]; fileSizeBytes: number }> {
  return withMediaFile(path, async (file) => ({ boxes: await file.boxes(), fileSizeBytes: file.sizeBytes }));
}

/** Reads the listed top-level boxes (whole) into one buffer each, in file order. */
export async function readBoxes(path: string, boxes: readonly TopLevelBox[]): Promise<Buffer[]> {
  return withMediaFile(path, (file) => file.boxBytes(boxes));
}

function corruptFile(path: string, message: string, offset: number): OriginError {
  return new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${path}: ${message} at byte ${offset}`, { file: path, offset });
}
