/** One line per ClampBackend. */
import type { NativeBinding } from '../binding.js';
import { BpfClampBackend } from './bpf.js';
import type { ClampBackend, ClampBackendName } from './clamp-backend.js';
import { NoClampBackend } from './none.js';
import { PacingRateClampBackend } from './pacing-rate.js';

export interface BackendContext {
  readonly native: NativeBinding | undefined;
  /** Why a stronger backend was not used. */
  readonly fallbackReason: string | undefined;
}

export const clampBackends: Readonly<Record<ClampBackendName, (context: BackendContext) => ClampBackend>> = {
  bpf: ({ native }) => new BpfClampBackend(native!),
  'pacing-rate': ({ fallbackReason }) => new PacingRateClampBackend(fallbackReason),
  none: ({ fallbackReason }) => new NoClampBackend(fallbackReason),
};
