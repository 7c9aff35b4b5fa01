/**
 * The media library: discovers assets below a media root, resolves request paths safely, keeps a
 * bounded in-memory cache of hot files (manifests, init and media segments) revalidated against
 * the file system, and builds each asset's media index once (rebuilt when its manifests change).
 *
 * Path safety is by construction: a request path is split into segments that must each match a
 * strict file-name pattern (no leading dot, no separators, no percent signs, no NUL), and the
 * resolved real path (symlinks followed) must stay inside the asset directory.
 */
import { open, readdir, readFile, realpath, stat, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { LRUCache } from 'lru-cache';
import { OriginError } from '../errors.js';
import { makeValidators, type Validators } from '../http/conditional.js';
import { classifyFile, type FileRole } from '../http/content-type.js';
import type { ByteRange } from '../http/range.js';
import { assetFilesOf, buildAssetIndex, hasMedia, type AssetFiles, type AssetIndex } from './media-index.js';

export interface MediaLibraryOptions {
  readonly root: string;
  /** Total bytes of file bodies kept in memory. */
  readonly cacheMaxBytes: number;
  /** Files larger than this are streamed from disk instead of cached. */
  readonly cacheMaxFileBytes: number;
  /** How long a cached stat is trusted before the file is checked again. */
  readonly revalidateMs: number;
  readonly now?: () => number;
  readonly onIndexError?: (asset: string, error: Error) => void;
}

export interface MediaFile {
  readonly asset: string;
  /** Path relative to the asset directory, with forward slashes. */
  readonly name: string;
  readonly path: string;
  readonly sizeBytes: number;
  readonly mtimeMs: number;
  readonly validators: Validators;
  readonly contentType: string;
  readonly role: FileRole;
  /** The whole file when it is small enough to cache; otherwise read from `path` per request. */
  readonly body: Buffer | undefined;
}

export interface AssetEntry {
  readonly name: string;
  readonly dir: string;
  readonly files: AssetFiles;
}

export type IndexState =
  | { readonly status: 'ready'; readonly index: AssetIndex }
  | { readonly status: 'broken'; readonly error: Error };

interface IndexEntry {
  readonly state: Promise<IndexState>;
  /** The state once the build is over (the request path reads it without waiting). */
  settled: IndexState | undefined;
  readonly fingerprint: string;
  checkedAtMs: number;
}

interface CachedFile {
  readonly kind: 'file';
  file: MediaFile;
  checkedAtMs: number;
  ino: number;
}

/** A fixed-size piece of a file too large to cache whole (a progressive MP4), for its ranges. */
interface CachedChunk {
  readonly kind: 'chunk';
  readonly bytes: Buffer;
}

/**
 * Large files are cached in pieces of this size: a 64 kB range is then a view of one cached
 * piece (no read through the thread pool, no copy), and the pieces share the cache's budget.
 */
export const fileChunkBytes = 1024 * 1024;

/** Ranges of uncached files up to this size are read whole (from the chunks); servers stream longer ones. */
export const wholeRangeMaxBytes = fileChunkBytes;

const fileNamePattern = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,254}$/;
const maxPathDepth = 8;

export function isSafeName(name: string): boolean {
  return fileNamePattern.test(name);
}

/** Splits a request path below an asset into safe segments, or returns undefined. */
export function safeRelativePath(relative: string): string[] | undefined {
  if (relative.length === 0 || relative.length > 1024) return undefined;
  const parts = relative.split('/');
  if (parts.length > maxPathDepth) return undefined;
  return parts.every(isSafeName) ? parts : undefined;
}

function isInside(parent: string, child: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

export class MediaLibrary {
  readonly root: string;
  private realRoot: string | undefined;
  private readonly options: MediaLibraryOptions;
  private readonly now: () => number;
  /** Whole small files and pieces of large ones, in one budget (cacheMaxBytes). */
  private readonly files: LRUCache<string, CachedFile | CachedChunk>;
  /** Loads under way, by cache key, so concurrent misses share one. */
  private readonly loading = new Map<string, Promise<MediaFile | undefined>>();
  private readonly loadingChunks = new Map<string, Promise<Buffer>>();
  /** Open handles of large files, so a range is one positional read rather than a new stream. */
  private readonly handles = new LRUCache<string, Promise<FileHandle>>({
    max: 64,
    dispose: (handle) => {
      void handle.then((h) => h.close()).catch(() => undefined);
    },
  });
  private readonly indexes = new Map<string, IndexEntry>();
  /**
   * Index checks under way, by asset: the requests that find an index due for its check share one.
   * Without it every request in flight when the check fell due listed the asset's directory and
   * stat'ed its manifests again (64 connections: ~50 listings a second, a tenth of a range's CPU).
   */
  private readonly checkingIndexes = new Map<string, Promise<IndexState | undefined>>();
  /** Index checks made (the asset's directory listed and its manifests stat'ed): a figure for /healthz. */
  private indexCheckCount = 0;

  constructor(options: MediaLibraryOptions) {
    this.options = options;
    this.root = options.root;
    this.now = options.now ?? Date.now;
    this.files = new LRUCache<string, CachedFile | CachedChunk>({
      max: 100_000,
      maxSize: Math.max(1, options.cacheMaxBytes),
      sizeCalculation: (entry) =>
        (entry.kind === 'chunk' ? entry.bytes.length : Math.max(1, entry.file.body?.length ?? 0)) + 256,
    });
  }

  /** Resolves the media root once; fails with a clear error when it is missing. */
  async open(): Promise<void> {
    try {
      this.realRoot = await realpath(this.root);
      const info = await stat(this.realRoot);
      if (!info.isDirectory()) throw new Error('not a directory');
    } catch (error) {
      throw new OriginError(
        'ORIGIN_ERR_MEDIA_ROOT',
        `media root ${this.root} is missing or not a readable directory (${(error as Error).message})`,
        { root: this.root },
        { cause: error },
      );
    }
  }

  private requireRoot(): string {
    if (this.realRoot === undefined)
      throw new OriginError('ORIGIN_ERR_MEDIA_ROOT', 'MediaLibrary.open() was not called', { root: this.root });
    return this.realRoot;
  }

  async listAssets(): Promise<AssetEntry[]> {
    const root = this.requireRoot();
    const entries = await readdir(root, { withFileTypes: true });
    const assets: AssetEntry[] = [];
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (!isSafeName(entry.name) || !(entry.isDirectory() || entry.isSymbolicLink())) continue;
      const asset = await this.getAsset(entry.name);
      if (asset !== undefined) assets.push(asset);
    }
    return assets;
  }

  /** The asset named `name`, or undefined when it does not exist or is not a media asset. */
  async getAsset(name: string): Promise<AssetEntry | undefined> {
    if (!isSafeName(name)) return undefined;
    const root = this.requireRoot();
    let dir: string;
    try {
      dir = await realpath(join(root, name));
    } catch {
      return undefined;
    }
    if (!isInside(root, dir) || dir === root) return undefined;
    let names: string[];
    try {
      names = (await readdir(dir)).filter(isSafeName).sort();
    } catch {
      return undefined;
    }
    const files = assetFilesOf(names);
    if (!hasMedia(files)) return undefined;
    return { name, dir, files };
  }

  /**
   * The file `relative` of `asset`, from the cache when still valid. Returns undefined for a path
   * that is malformed, leaves the asset, or names no regular file: callers answer 404.
   */
  async getFile(asset: string, relative: string): Promise<MediaFile | undefined> {
    const key = `${asset}/${relative}`;
    const entry = this.files.get(key);
    const cached = entry?.kind === 'file' ? entry : undefined;
    const nowMs = this.now();
    if (cached !== undefined && nowMs - cached.checkedAtMs < this.options.revalidateMs) return cached.file;
    if (!isSafeName(asset) || safeRelativePath(relative) === undefined) return undefined;
    // One load per file at a time: a thousand players asking for a cold file at once must not
    // read it a thousand times into a thousand buffers.
    const pending = this.loading.get(key);
    if (pending !== undefined) return pending;
    const load = this.loadFile(asset, relative, key, cached, nowMs).finally(() => this.loading.delete(key));
    this.loading.set(key, load);
    return load;
  }

  private async loadFile(
    asset: string,
    relative: string,
    key: string,
    cached: CachedFile | undefined,
    nowMs: number,
  ): Promise<MediaFile | undefined> {
    const root = this.requireRoot();
    const assetDir = join(root, asset);
    let path: string;
    let realAssetDir: string;
    try {
      realAssetDir = await realpath(assetDir);
      // A name the index serves from another file (a misnamed $Time$ segment), else the name itself.
      path = await realpath(join(assetDir, this.aliasOf(asset, relative) ?? relative));
    } catch {
      this.files.delete(key);
      return undefined;
    }
    if (!isInside(root, realAssetDir) || !isInside(realAssetDir, path)) return undefined;
    const info = await stat(path).catch(() => undefined);
    if (info === undefined || !info.isFile()) {
      this.files.delete(key);
      return undefined;
    }
    if (
      cached !== undefined &&
      cached.ino === info.ino &&
      cached.file.sizeBytes === info.size &&
      cached.file.mtimeMs === info.mtimeMs &&
      cached.file.path === path
    ) {
      cached.checkedAtMs = nowMs;
      return cached.file;
    }

    const { contentType, role } = this.indexedRole(asset, relative) ?? classifyFile(relative);
    let body: Buffer | undefined;
    if (info.size <= this.options.cacheMaxFileBytes) {
      body = await readFile(path);
      // A writer replaced the file between stat and read: serve what was read, and describe it.
      if (body.length !== info.size)
        return this.describe(asset, relative, path, body.length, info.mtimeMs, contentType, role, body);
    }
    const file = this.describe(asset, relative, path, info.size, info.mtimeMs, contentType, role, body);
    this.files.set(key, { kind: 'file', file, checkedAtMs: nowMs, ino: info.ino });
    return file;
  }

  /**
   * `range` of a file that is not cached whole. Ranges up to a chunk come from the cached chunks
   * that hold them (read once, then shared: a view when the range lies in one chunk); longer ones
   * are one positional read. A file that turns out shorter than its description (replaced or
   * truncated) is an ORIGIN_ERR_FILE_CHANGED. A range in one cached chunk is answered at once.
   */
  readRange(file: MediaFile, range: ByteRange): Buffer | Promise<Buffer> {
    const length = range.end - range.start + 1;
    // A chunk would not survive in a cache smaller than a few of them: read directly then.
    if (length > wholeRangeMaxBytes || this.options.cacheMaxBytes < 4 * fileChunkBytes)
      return this.readDirect(file, range.start, length);
    const firstChunk = Math.floor(range.start / fileChunkBytes);
    const lastChunk = Math.floor(range.end / fileChunkBytes);
    if (firstChunk === lastChunk) {
      const cached = this.files.get(this.chunkKey(file, firstChunk));
      const offset = range.start - firstChunk * fileChunkBytes;
      if (cached?.kind === 'chunk') return cached.bytes.subarray(offset, offset + length);
    }
    return this.readChunked(file, range, firstChunk, lastChunk);
  }

  private async readChunked(file: MediaFile, range: ByteRange, firstChunk: number, lastChunk: number): Promise<Buffer> {
    const length = range.end - range.start + 1;
    const chunks = await Promise.all(
      Array.from({ length: lastChunk - firstChunk + 1 }, (_, i) => this.chunk(file, firstChunk + i)),
    );
    const offset = range.start - firstChunk * fileChunkBytes;
    if (chunks.length === 1) return chunks[0]!.subarray(offset, offset + length);
    // Across a chunk boundary: copy just the range's bytes out of each chunk.
    const bytes = Buffer.allocUnsafe(length);
    let written = 0;
    for (const [i, chunk] of chunks.entries())
      written += chunk.copy(
        bytes,
        written,
        i === 0 ? offset : 0,
        Math.min(chunk.length, (i === 0 ? offset : 0) + length - written),
      );
    return bytes;
  }

  private chunkKey(file: MediaFile, index: number): string {
    return `\0chunk:${this.fileKey(file)}:${index}`;
  }

  private async chunk(file: MediaFile, index: number): Promise<Buffer> {
    const key = this.chunkKey(file, index);
    const cached = this.files.get(key);
    if (cached?.kind === 'chunk') return cached.bytes;
    const pending = this.loadingChunks.get(key);
    if (pending !== undefined) return pending;
    const start = index * fileChunkBytes;
    const load = this.readDirect(file, start, Math.min(fileChunkBytes, file.sizeBytes - start))
      .then((bytes) => {
        this.files.set(key, { kind: 'chunk', bytes });
        return bytes;
      })
      .finally(() => this.loadingChunks.delete(key));
    this.loadingChunks.set(key, load);
    return load;
  }

  /** Identifies one version of a file: a replaced file gets new chunks and a new handle. */
  private fileKey(file: MediaFile): string {
    return `${file.path}:${file.sizeBytes}:${file.mtimeMs}`;
  }

  private async readDirect(file: MediaFile, start: number, length: number): Promise<Buffer> {
    const key = this.fileKey(file);
    let handle = this.handles.get(key);
    if (handle === undefined) {
      handle = open(file.path, 'r');
      handle.catch(() => this.handles.delete(key));
      this.handles.set(key, handle);
    }
    const buffer = Buffer.allocUnsafe(length);
    let bytesRead: number;
    try {
      ({ bytesRead } = await (await handle).read(buffer, 0, length, start));
    } catch (error) {
      this.handles.delete(key);
      throw new OriginError(
        'ORIGIN_ERR_FILE_CHANGED',
        `${file.path} could not be read: ${(error as Error).message}`,
        { file: file.path },
        { cause: error },
      );
    }
    if (bytesRead !== length) {
      this.handles.delete(key);
      this.forget(file.asset, file.name);
      throw new OriginError(
        'ORIGIN_ERR_FILE_CHANGED',
        `${file.path} changed while being served: read ${bytesRead} of ${length} bytes`,
        { file: file.path },
      );
    }
    return buffer;
  }

  /** Closes open file handles (at shutdown). */
  close(): void {
    this.handles.clear();
  }

  /** Drops a file from the cache, e.g. after a read failed because it changed underneath. */
  forget(asset: string, relative: string): void {
    this.files.delete(`${asset}/${relative}`);
  }

  private describe(
    asset: string,
    name: string,
    path: string,
    sizeBytes: number,
    mtimeMs: number,
    contentType: string,
    role: FileRole,
    body: Buffer | undefined,
  ): MediaFile {
    return {
      asset,
      name,
      path,
      sizeBytes,
      mtimeMs,
      validators: makeValidators(sizeBytes, mtimeMs),
      contentType,
      role,
      body,
    };
  }

  /**
   * What the asset's index says a file is (an init segment, a file of segments, the progressive
   * file), with its media type; undefined when no index is built yet or the index does not name it
   * (its extension decides then). Only an index already built is consulted: a file request never
   * waits for indexing, and cached descriptions are dropped when an index is built.
   */
  private indexedRole(asset: string, relative: string): { role: FileRole; contentType: string } | undefined {
    const state = this.indexes.get(asset)?.settled;
    if (state?.status !== 'ready') return undefined;
    const index = state.index;
    const mp4Type = (kind: string) => (kind === 'audio' ? 'audio/mp4' : 'video/mp4');
    const init = index.renditionByInitFile.get(relative);
    if (init !== undefined) return { role: 'init', contentType: mp4Type(init.kind) };
    const rendition = index.segmentedFiles.get(relative)?.rendition ?? index.segmentByFile.get(relative)?.rendition;
    if (rendition !== undefined) {
      if (rendition.addressing === 'files') return { role: 'segment', contentType: classifyFile(relative).contentType };
      return { role: 'segment', contentType: rendition.container === 'ts' ? 'video/mp2t' : mp4Type(rendition.kind) };
    }
    if (index.progressive?.file === relative)
      return {
        role: 'progressive',
        contentType: mp4Type(index.progressive.layout.tracks.some((t) => t.kind === 'video') ? 'video' : 'audio'),
      };
    return undefined;
  }

  private aliasOf(asset: string, relative: string): string | undefined {
    const state = this.indexes.get(asset)?.settled;
    return state?.status === 'ready' ? state.index.fileAliases.get(relative) : undefined;
  }

  /** Drops the cached descriptions of an asset's files (their roles follow from a new index). */
  private forgetDescriptions(asset: string): void {
    const prefix = `${asset}/`;
    for (const key of [...this.files.keys()]) if (key.startsWith(prefix)) this.files.delete(key);
  }

  /** Cache statistics for /metrics and the benchmarks. */
  cacheStats(): { entries: number; bytes: number; indexChecks: number } {
    return { entries: this.files.size, bytes: this.files.calculatedSize, indexChecks: this.indexCheckCount };
  }

  /**
   * The asset's index, built once and rebuilt when a manifest or the progressive file changes.
   * A failure is kept (and reported once through onIndexError) until the files change.
   */
  async indexState(name: string): Promise<IndexState | undefined> {
    // Checked before the asset's directory is listed: every media request asks, and listing a
    // directory of hundreds of segments each time was most of a 64 kB range's cost.
    const nowMs = this.now();
    const known = this.indexes.get(name);
    // The settled value, not its promise: an async function returning a promise adopts it in two more microtask turns.
    if (known !== undefined && nowMs - known.checkedAtMs < this.options.revalidateMs)
      return known.settled ?? known.state;
    const checking = this.checkingIndexes.get(name);
    if (checking !== undefined) return checking;
    const check = this.checkIndex(name, known, nowMs).finally(() => this.checkingIndexes.delete(name));
    this.checkingIndexes.set(name, check);
    return check;
  }

  /** Lists the asset again and keeps its index while its manifests are unchanged, else builds a new one. */
  private async checkIndex(
    name: string,
    known: IndexEntry | undefined,
    nowMs: number,
  ): Promise<IndexState | undefined> {
    this.indexCheckCount += 1;
    const asset = await this.getAsset(name);
    if (asset === undefined) {
      this.indexes.delete(name);
      return undefined;
    }
    const fingerprint = await this.fingerprint(asset);
    if (known !== undefined && known.fingerprint === fingerprint) {
      known.checkedAtMs = nowMs;
      return known.settled ?? known.state;
    }
    const entry: IndexEntry = {
      state: buildAssetIndex(name, asset.dir, asset.files).then(
        (index): IndexState => ({ status: 'ready', index }),
        (error: Error): IndexState => {
          this.options.onIndexError?.(name, error);
          return { status: 'broken', error };
        },
      ),
      settled: undefined,
      fingerprint,
      checkedAtMs: nowMs,
    };
    void entry.state.then((state) => {
      entry.settled = state;
      this.forgetDescriptions(name);
    });
    this.indexes.set(name, entry);
    return entry.state;
  }

  private async fingerprint(asset: AssetEntry): Promise<string> {
    const names = [...asset.files.mpdFiles, ...asset.files.playlistFiles, ...asset.files.mp4Files];
    const parts = await Promise.all(
      names.map(async (n) => {
        const info = await stat(join(asset.dir, n)).catch(() => undefined);
        return `${n}:${info?.size ?? -1}:${info?.mtimeMs ?? -1}`;
      }),
    );
    return parts.join('|');
  }
}
