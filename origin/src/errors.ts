/**
 * Coded errors of the origin package. Every error the origin raises on purpose carries a stable
 * `code` (ORIGIN_ERR_*) so callers, logs and HTTP error bodies can name it without parsing text;
 * codes that reach HTTP carry their status here, in one place (`null`: not an HTTP answer, e.g.
 * a packaging or configuration error raised at the command line).
 */
export const originErrorCodes = {
  ORIGIN_ERR_CONFIG: { message: 'invalid configuration', status: null },
  ORIGIN_ERR_MEDIA_ROOT: { message: 'media root missing or unreadable', status: null },
  ORIGIN_ERR_DEMO_MISSING: { message: 'demo media has not been generated', status: 404 },
  ORIGIN_ERR_ASSET_NOT_FOUND: { message: 'no such asset', status: 404 },
  ORIGIN_ERR_FILE_NOT_FOUND: { message: 'no such file in asset', status: 404 },
  ORIGIN_ERR_NOT_FOUND: { message: 'no such route', status: 404 },
  ORIGIN_ERR_METHOD_NOT_ALLOWED: { message: 'the origin answers GET, HEAD and OPTIONS only', status: 405 },
  ORIGIN_ERR_BAD_PATH: { message: 'malformed or forbidden path', status: 400 },
  ORIGIN_ERR_BAD_QUERY: { message: 'malformed query parameter', status: 400 },
  ORIGIN_ERR_BAD_POLICY: { message: 'unknown delivery policy requested', status: 400 },
  ORIGIN_ERR_PRECONDITION: { message: 'a precondition (If-Match, If-Unmodified-Since) failed', status: 412 },
  ORIGIN_ERR_RANGE_NOT_SATISFIABLE: { message: 'the Range header names no satisfiable range', status: 416 },
  ORIGIN_ERR_CORRUPT_MEDIA: { message: 'media file could not be parsed', status: 500 },
  ORIGIN_ERR_UNSUPPORTED_MEDIA: { message: 'valid media in a form the index does not read', status: 422 },
  ORIGIN_ERR_INTERNAL: { message: 'internal error', status: 500 },
  ORIGIN_ERR_FILE_CHANGED: { message: 'media file changed while being read', status: 503 },
  ORIGIN_ERR_FFMPEG_MISSING: { message: 'ffmpeg/ffprobe not found on PATH', status: null },
  ORIGIN_ERR_FFMPEG_FAILED: { message: 'ffmpeg exited with an error', status: null },
  ORIGIN_ERR_INPUT_UNREADABLE: { message: 'input media cannot be read', status: null },
  ORIGIN_ERR_LADDER: { message: 'invalid or impossible encoding ladder', status: null },
  ORIGIN_ERR_PLAYER_MISSING: { message: 'a player library of /player/ is not installed', status: 404 },
  ORIGIN_ERR_TLS: { message: 'TLS certificate or key missing, unreadable or not a matching pair', status: null },
} as const satisfies Record<string, { readonly message: string; readonly status: number | null }>;

export type OriginErrorCode = keyof typeof originErrorCodes;

/** The HTTP status of a code (500 for codes that are not meant to reach HTTP). */
export function statusOf(code: OriginErrorCode): number {
  return originErrorCodes[code].status ?? 500;
}

/** The JSON body of every error answer: `{ error: { code, message } }`. */
export function errorBody(code: string, message: string, extra: Record<string, unknown> = {}) {
  return { error: { code, message, ...extra } };
}

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
