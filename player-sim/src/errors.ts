/** Coded errors of the player simulator (SIM_ERR_*). */
export const simErrorCodes = {
  SIM_ERR_TRACE: 'invalid bandwidth trace',
  SIM_ERR_MANIFEST: 'manifest could not be read',
  SIM_ERR_CONFIG: 'invalid simulation settings',
  SIM_ERR_FETCH: 'a live download failed',
} as const;

export type SimErrorCode = keyof typeof simErrorCodes;

export class SimError extends Error {
  readonly code: SimErrorCode;

  constructor(code: SimErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SimError';
    this.code = code;
  }
}
