/** openFileSend's reading of the addon's errors: which are the file's (a 503 to the client) and which the process's. */
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { describe, it } from 'node:test';
import type { SocketControl } from '@trickle/native';
import { OriginError } from '../../src/errors.js';
import { openFileSend } from '../../src/delivery/sent-file-body.js';

/** A control whose openFileSend fails as the addon does: `code` and `syscall` on an Error. */
function failingControl(code: string, syscall?: string): SocketControl {
  return {
    openFileSend: () => {
      throw Object.assign(new Error(`${syscall ?? 'sendfile'}: ${code}`), { code, syscall });
    },
  } as unknown as SocketControl;
}

function open(control: SocketControl): { result: ReturnType<typeof openFileSend>; reported: string[] } {
  const reported: string[] = [];
  const result = openFileSend(control, {} as Socket, '/srv/media/a/seg-1.m4s', 1000, (operation, error) =>
    reported.push(`${operation}:${(error as NodeJS.ErrnoException).code}`),
  );
  return { result, reported };
}

describe('openFileSend', () => {
  it('reads a file gone or shorter than described as the file having changed (ORIGIN_ERR_FILE_CHANGED)', () => {
    for (const [code, syscall] of [
      ['ENOENT', 'open'],
      ['EACCES', 'open'],
      ['NATIVE_ERR_FILE_SHORT', undefined],
    ] as const) {
      const { result, reported } = open(failingControl(code, syscall));
      assert.ok(result instanceof OriginError, code);
      assert.equal(result.code, 'ORIGIN_ERR_FILE_CHANGED');
      assert.deepEqual(reported, []);
    }
  });

  it("reads descriptors run out (EMFILE, ENFILE) and a socket that cannot be duplicated as the process's: counted, and Node writes the response", () => {
    for (const [code, syscall] of [
      ['EMFILE', 'open'],
      ['ENFILE', 'open'],
      ['EMFILE', 'fcntl'],
      ['EBADF', 'fcntl'],
    ] as const) {
      const { result, reported } = open(failingControl(code, syscall));
      assert.equal(result, undefined, `${syscall} ${code}`);
      assert.deepEqual(reported, [`openFileSend:${code}`]);
    }
  });
});
