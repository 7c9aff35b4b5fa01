/** No clamp at all (no addon on this host): every call is a no-op, and says so in `backend`. */
import { NativeError } from '../errors.js';
import type { ClampBackend, ClampSocketState, ClampStats } from './clamp-backend.js';

export class NoClampBackend implements ClampBackend {
  readonly backend = 'none';

  constructor(readonly fallbackReason: string | undefined) {}

  setRate(): void {}
  setPackets(): void {}
  release(): void {}

  setInitialWindow(): void {
    throw new NativeError(
      'NATIVE_ERR_UNSUPPORTED',
      `an initial window (TCP_BPF_IW) needs the bpf clamp backend; there is ` +
        `none${this.fallbackReason === undefined ? '' : `: ${this.fallbackReason}`}`,
    );
  }
  setSchedule(): void {
    throw new NativeError(
      'NATIVE_ERR_UNSUPPORTED',
      `a schedule in the kernel needs the bpf clamp backend; there is ` +
        `none${this.fallbackReason === undefined ? '' : `: ${this.fallbackReason}`}`,
    );
  }

  forget(): void {}

  state(): ClampSocketState | undefined {
    return undefined;
  }

  /** No schedules run here, so none is kept. */
  takeClosedPhase(): undefined {
    return undefined;
  }

  stats(): ClampStats {
    return { backend: 'none', entries: 0, updatesApplied: 0, errors: 0 };
  }

  close(): void {}
}
