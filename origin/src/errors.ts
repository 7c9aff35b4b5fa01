/**
 * Coded errors of the origin package. Every error the origin raises on purpose carries a stable
 * `code` (ORIGIN_ERR_*) so callers, logs and HTTP error bodies can name it without parsing text.
 */
export const originErrorCodes = {
  ORIGIN_ERR_CONFIG: 'invalid configuration',
  ORIGIN_ERR_MEDIA_ROOT: 'media root missing or unreadable',
  ORIGIN_ERR_DEMO_MISSING: 'demo media has not been generated',
  ORIGIN_ERR_ASSET_NOT_FOUND: 'no such asset',
  ORIGIN_ERR_FILE_NOT_FOUND: 'no such file in asset',
  ORIGIN_ERR_BAD_PATH: 'malformed or forbidden path',
  ORIGIN_ERR_CORRUPT_MEDIA: 'media file could not be parsed',
  ORIGIN_ERR_FILE_CHANGED: 'media file changed while being read',
  ORIGIN_ERR_FFMPEG_MISSING: 'ffmpeg/ffprobe not found on PATH',
  ORIGIN_ERR_FFMPEG_FAILED: 'ffmpeg exited with an error',
  ORIGIN_ERR_INPUT_UNREADABLE: 'input media cannot be read',
  ORIGIN_ERR_LADDER: 'invalid or impossible encoding ladder',
  ORIGIN_ERR_BAD_POLICY: 'unknown delivery policy requested',
  ORIGIN_ERR_BAD_QUERY: 'malformed query parameter',
} as const;

export type OriginErrorCode = keyof typeof originErrorCodes;

export class OriginError extends Error {
  readonly code: OriginErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: OriginErrorCode, message: string, details: Record<string, unknown> = {}, options?: ErrorOptions) {
    super(message, options);
    this.name = 'OriginError';
    this.code = code;
    this.details = Object.freeze({ ...details });
  }
}

export function isOriginError(value: unknown, code?: OriginErrorCode): value is OriginError {
  return value instanceof OriginError && (code === undefined || value.code === code);
}
