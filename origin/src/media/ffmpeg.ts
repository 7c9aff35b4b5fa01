/** Running the system ffmpeg/ffprobe with progress reporting and clear errors. */
import { spawn } from 'node:child_process';
import { OriginError } from '../errors.js';

export interface FfmpegTools {
  readonly ffmpeg: string;
  readonly ffprobe: string;
}

export const defaultTools: FfmpegTools = {
  ffmpeg: process.env.TRICKLE_FFMPEG ?? 'ffmpeg',
  ffprobe: process.env.TRICKLE_FFPROBE ?? 'ffprobe',
};

/**
 * Runs a media tool, collecting its output; a command not found is ORIGIN_ERR_FFMPEG_MISSING (callers of other tools
 * map it).
 */
export function runTool(
  command: string,
  args: readonly string[],
  onStdoutLine?: (line: string) => void,
  cwd?: string,
): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(cwd === undefined ? {} : { cwd }) });
    let stdout = '';
    let stderr = '';
    let partial = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      if (onStdoutLine === undefined) {
        stdout += chunk;
        return;
      }
      partial += chunk;
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      lines.forEach(onStdoutLine);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      // Keep the tail only: ffmpeg can be chatty and the last lines carry the error.
      stderr = (stderr + chunk).slice(-16_384);
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') {
        reject(
          new OriginError(
            'ORIGIN_ERR_FFMPEG_MISSING',
            `${command} not found on PATH: install it (Debian: apt-get install ffmpeg) or set ` +
              `TRICKLE_FFMPEG/TRICKLE_FFPROBE`,
            { command },
            { cause: error },
          ),
        );
      } else {
        reject(error);
      }
    });
    child.on('close', (code) => resolve({ stdout, stderr, code }));
  });
}

export async function checkTools(tools: FfmpegTools = defaultTools): Promise<void> {
  for (const command of [tools.ffmpeg, tools.ffprobe]) {
    const { code } = await runTool(command, ['-hide_banner', '-version']);
    if (code !== 0)
      throw new OriginError('ORIGIN_ERR_FFMPEG_MISSING', `${command} -version failed (exit ${code})`, { command });
  }
}

/**
 * Runs ffmpeg with `-progress pipe:1`, reporting the fraction of `expectedDurationSec` written.
 */
export async function runFfmpeg(
  args: readonly string[],
  options: { expectedDurationSec: number; onProgress?: (fraction: number) => void; tools?: FfmpegTools; what: string },
): Promise<void> {
  const tools = options.tools ?? defaultTools;
  const fullArgs = ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-progress', 'pipe:1', '-nostats', ...args];
  const { code, stderr } = await runTool(tools.ffmpeg, fullArgs, (line) => {
    const match = /^out_time_(?:us|ms)=(\d+)/.exec(line);
    if (match !== null && options.onProgress !== undefined && options.expectedDurationSec > 0) {
      options.onProgress(Math.min(1, Number(match[1]) / 1e6 / options.expectedDurationSec));
    }
  });
  if (code !== 0) {
    throw new OriginError(
      'ORIGIN_ERR_FFMPEG_FAILED',
      `ffmpeg failed while ${options.what} (exit ${code}):\n${stderr.trim().split('\n').slice(-8).join('\n')}`,
      { exitCode: code, stderr },
    );
  }
  options.onProgress?.(1);
}

export interface ProbeStream {
  readonly index: number;
  readonly codec_type: string;
  readonly codec_name?: string;
  readonly width?: number;
  readonly height?: number;
  readonly avg_frame_rate?: string;
  readonly r_frame_rate?: string;
  readonly duration?: string;
  readonly sample_aspect_ratio?: string;
  readonly display_aspect_ratio?: string;
}

export interface ProbeResult {
  readonly streams: readonly ProbeStream[];
  readonly format: { readonly duration?: string; readonly format_name?: string };
}

export async function ffprobe(
  input: string,
  extraArgs: readonly string[] = [],
  tools: FfmpegTools = defaultTools,
): Promise<ProbeResult & Record<string, unknown>> {
  const { code, stdout, stderr } = await runTool(tools.ffprobe, [
    '-v',
    'error',
    '-print_format',
    'json',
    '-show_format',
    '-show_streams',
    ...extraArgs,
    input,
  ]);
  if (code !== 0) {
    throw new OriginError(
      'ORIGIN_ERR_INPUT_UNREADABLE',
      `ffprobe cannot read ${input}: ${stderr.trim().split('\n').slice(-3).join(' ') || `exit ${code}`}`,
      { input },
    );
  }
  return JSON.parse(stdout) as ProbeResult & Record<string, unknown>;
}

/** "30000/1001" -> 29.97; "0/0" -> undefined. */
export function parseRational(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const [num, den] = value.split('/').map(Number);
  if (num === undefined || !Number.isFinite(num)) return undefined;
  if (den === undefined) return num;
  return den > 0 && num > 0 ? num / den : undefined;
}
