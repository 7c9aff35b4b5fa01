/** The CLI's own coded errors (the packages' are theirs: ORIGIN_ERR_*, NATIVE_ERR_*, E2E_ERR_*, ...). */
export type CliErrorCode = 'CLI_ERR_NOT_A_CHECKOUT';

export class CliError extends Error {
  constructor(
    readonly code: CliErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}
