/**
 * Responses written with sendfile(2): user space hands byte ranges of the file to the socket as the
 * socket has room (the addon watches it on the event loop) and steps aside: no read into memory, no
 * copy, no JavaScript per chunk. The bodies carry no bytes: fastify pipes them to the response,
 * which ends (with nothing more to write) once every byte is in the socket. Destroying a body (the
 * client left) stops its transfer at once.
 */
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import type { FileSend, SendFileDone, SocketControl } from '@trickle/native';
import { OriginError } from '../errors.js';
import type { BlockSink } from './paced-body.js';

const noBytes = Buffer.alloc(0);

/**
 * The response's file held open for sendfile(2) into its socket, opened before the response
 * starts, while its status can still say what went wrong: a file replaced, truncated or gone since
 * it was described is an ORIGIN_ERR_FILE_CHANGED (503), as a failed read is. (Truncated later,
 * mid-response, a write fails and the connection is cut: never silently short data.) A socket that
 * cannot be duplicated (descriptors exhausted, or it closed) is the socket's failure, not the
 * file's, and so is a file that cannot be opened for want of descriptors (EMFILE, ENFILE: the
 * process's limit, not the file): reported to `socketError`, and undefined (Node writes the response).
 */
export function openFileSend(
  control: SocketControl,
  socket: Socket,
  path: string,
  endOffset: number,
  socketError: (operation: string, error: unknown) => void,
): FileSend | OriginError | undefined {
  try {
    return control.openFileSend(socket, path, endOffset);
  } catch (error) {
    const { code, syscall } = error as NodeJS.ErrnoException;
    if (code === 'EMFILE' || code === 'ENFILE') {
      socketError('openFileSend', error);
      return undefined;
    }
    if (code === 'NATIVE_ERR_FILE_SHORT')
      return new OriginError(
        'ORIGIN_ERR_FILE_CHANGED',
        `${path} changed while being served: it ends before ${endOffset} bytes`,
        { file: path },
        { cause: error },
      );
    if (syscall === 'open' || syscall === 'fstat')
      return new OriginError(
        'ORIGIN_ERR_FILE_CHANGED',
        `${path} could not be read: ${(error as Error).message}`,
        { file: path },
        { cause: error },
      );
    socketError('openFileSend', error);
    return undefined;
  }
}

/**
 * A sink that writes a file's ranges into the socket through a held transfer. `flushHeaders`
 * hands the response's header to the socket: it goes through Node's own write queue, and an empty
 * write after it completes once it is in the socket, before the file's first byte. `sent` counts
 * every write's bytes and sendfile calls.
 */
export function sendFileSink(
  socket: Socket,
  transfer: FileSend,
  flushHeaders: () => void,
  sent: (sentBytes: number, calls: number) => void,
): BlockSink {
  let pending: ((error: Error | null) => void) | undefined;
  const written: SendFileDone = (error, sentBytes, calls) => {
    sent(sentBytes, calls);
    const done = pending!;
    pending = undefined;
    done(error);
  };
  return {
    start(ready) {
      flushHeaders();
      socket.write(noBytes, (error) => ready(error ?? null));
    },
    send(offset, sizeBytes, done) {
      pending = done;
      const calls = transfer.write(offset, sizeBytes, written);
      if (calls < 0) return false;
      pending = undefined;
      sent(sizeBytes, calls);
      return true;
    },
    close() {
      pending = undefined;
      transfer.close();
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
    try {
      for (let piece = this.pieces[index]; !this.destroyed; piece = this.pieces[++index]) {
        if (piece === undefined) {
          this.allPushed = true;
          this.sink.close();
          this.push(null);
          return;
        }
        piece.before?.();
        const next = index + 1;
        if (
          !this.sink.send(piece.offset, piece.sizeBytes, (error) =>
            error === null ? this.next(next) : this.destroy(error),
          )
        )
          return;
      }
    } catch (error) {
      this.destroy(error as Error);
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.allPushed) this.sink.close();
    callback(error);
  }
}
