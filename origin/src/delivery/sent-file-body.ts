/**
 * Responses written with sendfile(2): user space hands byte ranges of the file to the socket as the
 * socket has room (the addon watches it on the event loop) and steps aside: no read into memory, no
 * copy, no JavaScript per chunk. The bodies carry no bytes: fastify pipes them to the response,
 * which ends (with nothing more to write) once every byte is in the socket. Destroying a body (the
 * client left) stops its transfer at once.
 */
import { statSync } from 'node:fs';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { FileSend, SocketControl } from '@trickle/native';
import { OriginError } from '../errors.js';
import type { BlockSink } from './paced-body.js';

const noBytes = Buffer.alloc(0);

/**
 * Whether the file still holds bytes up to `endOffset` (exclusive), checked before the response
 * starts, while its status can still say so: a file replaced or truncated since it was described
 * is an ORIGIN_ERR_FILE_CHANGED (503), as a failed read is. (Truncated later, mid-response, the
 * transfer fails and the connection is cut: never silently short data.)
 */
export function fileChangedError(path: string, endOffset: number): OriginError | undefined {
  let sizeBytes: number;
  try {
    sizeBytes = statSync(path).size;
  } catch (error) {
    return new OriginError('ORIGIN_ERR_FILE_CHANGED', `${path} could not be read: ${(error as Error).message}`, { file: path }, { cause: error });
  }
  return sizeBytes < endOffset ? new OriginError('ORIGIN_ERR_FILE_CHANGED', `${path} changed while being served: ${sizeBytes} bytes, the range ends at ${endOffset}`, { file: path }) : undefined;
}

/**
 * A sink that writes a file's ranges into the socket with sendfile(2). `flushHeaders` hands the
 * response's header to the socket: it goes through Node's own write queue, and an empty write
 * after it completes once it is in the socket, before the file's first byte.
 */
export function sendFileSink(socket: Socket, path: string, sendFile: SocketControl['sendFile'], flushHeaders: () => void): BlockSink {
  let running: FileSend | undefined;
  return {
    start(ready) {
      flushHeaders();
      socket.write(noBytes, (error) => ready(error ?? null));
    },
    send(offset, sizeBytes, done) {
      running = sendFile(socket, path, offset, sizeBytes, (error) => {
        running = undefined;
        done(error);
      });
    },
    cancel() {
      running?.cancel();
      running = undefined;
    },
  };
}

/** Consecutive byte ranges of the file, each written once the previous one is in the socket. */
export interface SentFilePiece {
  readonly offset: number;
  readonly sizeBytes: number;
  /** Called just before the piece's bytes are handed to the socket. */
  readonly before?: () => void;
}

/** A body written whole, piece after piece, as fast as the socket takes it (the kernel paces it). */
export class SentFileBody extends Readable {
  private started = false;
  /** Every byte of the range is in the socket. */
  allPushed = false;

  constructor(
    private readonly sink: BlockSink,
    private readonly pieces: readonly SentFilePiece[],
  ) {
    super();
  }

  override _read(): void {
    if (this.started) return;
    this.started = true;
    this.sink.start((error) => (error === null ? this.next(0) : this.destroy(error)));
  }

  private next(index: number): void {
    if (this.destroyed) return;
    const piece = this.pieces[index];
    if (piece === undefined) {
      this.allPushed = true;
      this.push(null);
      return;
    }
    piece.before?.();
    this.sink.send(piece.offset, piece.sizeBytes, (error) => (error === null ? this.next(index + 1) : this.destroy(error)));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.allPushed) this.sink.cancel();
    callback(error);
  }
}
