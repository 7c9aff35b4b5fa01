/**
 * Coded errors of the native package. Syscall failures from the addon keep Node's own shape
 * instead: `code` is the errno name (EBADF, ENOTSOCK, ...), `errno` its negative value, `syscall`.
 */
export const nativeErrorCodes = {
  NATIVE_ERR_UNSUPPORTED: 'the native addon is not available on this host',
  NATIVE_ERR_ARGUMENT: 'invalid argument',
  NATIVE_ERR_FILE_SHORT: 'the file ended before the range it was described with (replaced or truncated)',
  NATIVE_ERR_BPF_UNAVAILABLE: 'the BPF clamp cannot be used here',
  NATIVE_ERR_BPF_STALE: 'the pinned BPF clamp is from another build of the program',
  NATIVE_ERR_BPF_NOT_ATTACHED: 'the BPF clamp is not attached',
  NATIVE_ERR_CGROUP: 'cgroup v2 setup failed',
  NATIVE_ERR_PRIVILEGE: 'this needs root',
} as const;

export type NativeErrorCode = keyof typeof nativeErrorCodes;

export class NativeError extends Error {
  readonly code: NativeErrorCode;

  constructor(code: NativeErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'NativeError';
    this.code = code;
  }
}

/** The error shape the addon throws for a failed syscall (and our EBADF for a closed socket). */
export interface SyscallError extends Error {
  code: string;
  errno: number;
  syscall: string;
}

export function isSyscallError(value: unknown): value is SyscallError {
  return (
    value instanceof Error &&
    typeof (value as Partial<SyscallError>).syscall === 'string' &&
    typeof (value as Partial<SyscallError>).errno === 'number'
  );
}
