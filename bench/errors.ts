/** Coded errors of the benchmarks: the CLI prints them as one line (`trickle: <message> [code]`). */
export const benchErrorCodes = {
  BENCH_ERR_MISSING_TOOL: 'a tool the benchmark compares with or drives is not installed',
  BENCH_ERR_SERVER: 'a server the benchmark runs did not start or answer',
  BENCH_ERR_MEDIA: 'the media a benchmark serves is missing',
  BENCH_ERR_NETWORK: 'the network a benchmark runs over could not be set up (a route, a namespace)',
  BENCH_ERR_GUEST: 'the part of a benchmark run inside a guest kernel failed',
  BENCH_ERR_USAGE: 'a benchmark option is malformed or names something the benchmark does not know',
} as const;

export type BenchErrorCode = keyof typeof benchErrorCodes;

export class BenchError extends Error {
  readonly code: BenchErrorCode;

  constructor(code: BenchErrorCode, message: string) {
    super(message);
    this.name = 'BenchError';
    this.code = code;
  }
}
