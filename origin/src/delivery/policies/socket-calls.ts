/**
 * The socket calls more than one policy makes, never throwing on the request path: a failure is
 * reported through `env.socketError` (logged once, counted) and the response carries on.
 */
import type { PolicyEnv } from './delivery-policy.js';

export function setNotsentLowat(env: PolicyEnv, bytes: number): void {
  try {
    env.control.setNotsentLowat(env.socket, bytes);
  } catch (error) {
    env.socketError('setNotsentLowat', error);
  }
}
