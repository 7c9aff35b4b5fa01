/** Coded errors of the e2e package (E2E_ERR_*). */
export const e2eErrorCodes = {
  E2E_ERR_BROWSER_LAUNCH: 'Chromium could not be started',
  E2E_ERR_LINK_SPEC: 'invalid link specification',
  E2E_ERR_POPULATION: 'invalid population of access links',
  E2E_ERR_TRACE: 'invalid bandwidth trace',
  E2E_ERR_CAPTURE: 'packet capture could not be read',
  E2E_ERR_LAB: 'the lab could not be set up or used',
  E2E_ERR_PRIVILEGE: 'this needs root and network namespaces',
  E2E_ERR_HARNESS: 'the browser harness failed (not a QoE outcome)',
  E2E_ERR_CODECS: "the browser cannot decode the stream's codecs",
  E2E_ERR_OPTIONS: 'invalid e2e run options',
  E2E_ERR_EXPERIMENT_CONFIG: 'invalid experiment configuration',
  E2E_ERR_EXPERIMENT: 'an experiment run failed',
} as const;

export type E2eErrorCode = keyof typeof e2eErrorCodes;

export class E2eError extends Error {
  readonly code: E2eErrorCode;

  constructor(code: E2eErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'E2eError';
    this.code = code;
  }
}
