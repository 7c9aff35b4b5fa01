/** One line per LinkBackend. */
import { DelaylineBackend } from './delayline-backend.js';
import type { LinkBackend, LinkBackendName } from './link-backend.js';
import { NetemBackend } from './netem-backend.js';

export const linkBackends: Readonly<Record<LinkBackendName, () => LinkBackend>> = {
  delayline: () => new DelaylineBackend(),
  netem: () => new NetemBackend(),
};
