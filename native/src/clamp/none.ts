/** No clamp at all (no addon on this host): every call is a no-op, and says so in `backend`. */
import type { ClampBackend, ClampSocketState, ClampStats } from './clamp-backend.js';

export class NoClampBackend implements ClampBackend {
  readonly backend = 'none';

  constructor(readonly fallbackReason: string | undefined) {}

  setRate(): void {}
  setPackets(): void {}
  release(): void {}
  forget(): void {}

  state(): ClampSocketState | undefined {
    return undefined;
  }

  stats(): ClampStats {
    return { backend: 'none', entries: 0, updatesApplied: 0, errors: 0 };
  }

  close(): void {}
}
