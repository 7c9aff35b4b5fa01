/**
 * Where the package's built programs are, without loading the addon (`@trickle/native/paths`): what
 * a process that only runs the lab's delay line needs (the lab's trace replayer starts in seconds
 * in an emulated guest kernel, where loading the addon takes many).
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The lab's delay line program built at install time (see delayline/delayline.c). */
export function delaylinePath(): string {
  return join(packageRoot, 'out', 'delayline');
}
