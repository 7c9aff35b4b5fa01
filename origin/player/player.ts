/**
 * The /player/ page: plays an asset (or any `src` URL) with dash.js, hls.js or a plain <video>,
 * and keeps a QoE snapshot on `window.trickle` plus an event stream (`window.trickleEvents`, and
 * `window.trickleEmit` when a harness exposes it) that tests, the e2e harness and people read.
 *
 * - startup: load to the first `playing`;
 * - a rebuffer: a `waiting` after the first `playing`, not during a seek, until the next
 *   `playing` or `ended`; a watchdog on `currentTime` confirms it (the element can say `waiting`
 *   while time still advances from what is buffered);
 * - a stall: the watchdog saw `currentTime` stop while playing (with or without `waiting`);
 * - a video freeze: time advances but no new video frames are decoded (the picture stands still),
 *   reported apart because players do not announce it;
 * - hls.js repeats `bufferStalledError` during one stall: counted once per stall;
 * - the end: the element's `ended`, or playback parked within `endToleranceSec` of the duration for
 *   `endParkedMs` (dash.js can miss signalling end of stream when a track ends a frame short of the
 *   MPD's duration, and then seeks to the end over and over without `ended`; the viewer has seen
 *   every frame by then). Parked means time has not gone past the furthest point it reached there
 *   by `endProgressSec`: still playing, however slowly (a starved machine), is not the end. The
 *   `ended` event says which (`byElement`).
 *
 * Query parameters: asset, player (dashjs|hlsjs|shaka|native), src (a URL to play instead of an asset),
 * policy (adds `?policy=` to every media request; the origin needs --allow-policy-override),
 * cmcd (1: send CMCD as query keys), abr (dash.js: throughput|bola|dynamic), safetyFactor (the
 * share of its throughput estimate the player may spend on a rung: dash.js's bandwidthSafetyFactor,
 * hls.js's abrBandWidthUpFactor, Shaka's bandwidthUpgradeTarget; other players' margins, e.g. 0.7),
 * bufferSeconds (the forward buffer target), start (seconds: begin playback there, as a viewer who
 * resumes or follows a link into the middle does), seek (`<at>:<to>`: once playback reaches `at`
 * seconds, jump to `to`).
 */
import type * as DashJs from 'dashjs';
import type HlsClass from 'hls.js';
import type * as ShakaModule from 'shaka-player';

declare const dashjs: typeof DashJs;
declare const Hls: typeof HlsClass;
// Its typings are CommonJS (`export default shaka` without "type": "module"): under nodenext the default is
// module.exports, whose `default` is the namespace.
declare const shaka: typeof ShakaModule.default.default;
type DashThroughputSettings = NonNullable<
  NonNullable<NonNullable<DashJs.MediaPlayerSettingClass['streaming']>['abr']>['throughput']
>;

type PlayerKind = 'dashjs' | 'hlsjs' | 'shaka' | 'native';
type AbrName = 'throughput' | 'bola' | 'dynamic';

interface AssetLinks {
  readonly name: string;
  readonly status: string;
  readonly links: { readonly dash: string | null; readonly hls: string | null; readonly progressive: string | null };
}

interface PlaybackOptions {
  readonly player: PlayerKind;
  readonly url: string;
  readonly asset: string | null;
  readonly policy: string | null;
  readonly cmcd: boolean;
  readonly abr: AbrName;
  readonly safetyFactor: number | null;
  readonly bufferSeconds: number | null;
  /** Where playback begins, media seconds (null: the start). */
  readonly startSec: number | null;
  readonly seek: { readonly atSec: number; readonly toSec: number } | null;
}

interface Episode {
  startMs: number;
  durationMs: number | null;
}

interface Snapshot {
  asset: string | null;
  player: PlayerKind;
  url: string;
  policy: string | null;
  cmcd: boolean;
  abr: AbrName;
  safetyFactor: number | null;
  bufferSeconds: number | null;
  loadedAtMs: number;
  startupMs: number | null;
  /**
   * `bufferAheadSec`: the media buffered ahead of currentTime when the watchdog confirmed the stall
   * (null until then). A stall with media ahead is the decoder's or the renderer's (a starved CPU),
   * not the delivery's.
   */
  rebuffers: (Episode & { confirmedByWatchdog: boolean; bufferAheadSec: number | null })[];
  stalls: Episode[];
  videoFreezes: Episode[];
  bitrateTimeline: { atMs: number; bitrateBps: number }[];
  switches: { atMs: number; bitrateBps: number }[];
  bitrateBps: number | null;
  playedSeconds: number;
  /**
   * Wall time the machine, not the delivery, held play back outside rebuffers: the media clock behind the wall clock
   * while it moved (a starved renderer plays slower than real time), or standing still with media in hand.
   */
  slowPlayMs: number;
  totalFrames: number;
  droppedFrames: number;
  ended: boolean;
  /** When the end was (ms since load): the element's `ended`, or when playback parked at the end. */
  endedAtMs: number | null;
  errors: string[];
}

interface PlayerEvent {
  readonly atMs: number;
  readonly type: string;
  readonly [key: string]: unknown;
}

declare global {
  interface Window {
    trickle: Snapshot | undefined;
    trickleEvents: PlayerEvent[];
    trickleEmit?: (event: PlayerEvent) => void;
  }
}

/** A stop of currentTime this long while playing is a stall; shorter ones are timer jitter. */
const stallAfterMs = 500;
const watchdogIntervalMs = 100;
/**
 * Playback parked this close to the duration has shown all there is: a track can end a frame or two
 * short of the MPD's duration (the demo's audio, 50 ms), and Chromium stops 50 ms before the end of
 * what is buffered when end of stream is not signalled.
 */
const endToleranceSec = 0.25;
/** Media time that, played near the end, restarts the parked clock (a seek in place never adds it). */
const endProgressSec = 0.02;
/**
 * Parked this long is the end: twice the stall threshold, so a starved machine's pause lets the
 * element's own `ended` win, and under the ~1.6-2 s after which dash.js, parked without end of
 * stream, seeks back half a second and plays up to the same place again.
 */
const endParkedMs = 1_000;
/**
 * Media buffered ahead that makes a stop the renderer's: at a rebuffer's start the element has ~50 ms left to show
 * when it says `waiting`.
 */
const mediaInHandSec = 0.25;

/** Whether playback at `timeSec` is within the end tolerance of a known duration: the end is coming, not a stall. */
const withinEndTolerance = (timeSec: number): boolean =>
  Number.isFinite(video.duration) && timeSec >= video.duration - endToleranceSec;

const byId = <T extends HTMLElement>(id: string): T => {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`missing #${id}`);
  return element as T;
};

const video = byId<HTMLVideoElement>('video');
const assetSelect = byId<HTMLSelectElement>('asset');
const playerSelect = byId<HTMLSelectElement>('player');
let teardown: (() => void) | undefined;
let seeking = false;
let pendingSeek: PlaybackOptions['seek'] = null;
window.trickleEvents = [];

const base = new URL('..', window.location.href);
const absolute = (relative: string): string => new URL(relative, base).href;

function sinceLoadMs(): number {
  return performance.now() - (window.trickle?.loadedAtMs ?? 0);
}

function emit(type: string, detail: Record<string, unknown> = {}): void {
  const event: PlayerEvent = { atMs: Math.round(sinceLoadMs()), type, ...detail };
  window.trickleEvents.push(event);
  window.trickleEmit?.(event);
}

function show(id: string, text: string): void {
  byId(id).textContent = text;
}

function fail(message: string): void {
  window.trickle?.errors.push(message);
  emit('error', { message });
  show('error', message);
}

function openEpisode<T extends Episode>(episodes: T[]): T | undefined {
  const last = episodes[episodes.length - 1];
  return last !== undefined && last.durationMs === null ? last : undefined;
}

function closeEpisodes(nowMs: number, ...lists: Episode[][]): void {
  for (const list of lists) {
    const open = openEpisode(list);
    if (open !== undefined) open.durationMs = Math.max(0, nowMs - open.startMs);
  }
}

function recordBitrate(bitrateBps: number): void {
  const snapshot = window.trickle;
  if (snapshot === undefined || snapshot.bitrateBps === bitrateBps) return;
  const atMs = sinceLoadMs();
  if (snapshot.bitrateBps !== null) snapshot.switches.push({ atMs, bitrateBps });
  snapshot.bitrateTimeline.push({ atMs, bitrateBps });
  snapshot.bitrateBps = bitrateBps;
  emit('bitrate', { bitrateBps });
  show('bitrate', `${(bitrateBps / 1e6).toFixed(2)} Mbit/s`);
  show('switches', String(snapshot.switches.length));
}

/** The URL with `policy=` added, so the origin serves it with that policy (experiments). */
function withPolicy(url: string, policy: string | null): string {
  if (policy === null) return url;
  const parsed = new URL(url);
  parsed.searchParams.set('policy', policy);
  return parsed.href;
}

function startDashjs(options: PlaybackOptions): () => void {
  const dash = dashjs.MediaPlayer().create();
  const buffer =
    options.bufferSeconds === null
      ? {}
      : {
          bufferTimeDefault: options.bufferSeconds,
          bufferTimeAtTopQuality: options.bufferSeconds,
          bufferTimeAtTopQualityLongForm: options.bufferSeconds,
        };
  dash.updateSettings({
    streaming: {
      buffer,
      abr: {
        // updateSettings merges into the defaults; dash.js 5's type wants every throughput field anyway.
        ...(options.safetyFactor === null
          ? {}
          : { throughput: { bandwidthSafetyFactor: options.safetyFactor } as DashThroughputSettings }),
        rules: {
          throughputRule: { active: options.abr !== 'bola' },
          bolaRule: { active: options.abr !== 'throughput' },
          // dash.js 5.2.1 with CMCD on cannot abort a request: its CMCD request interceptor hands the
          // loader a copy of the request, so the abort finds no XHR on the original. An abandoned
          // segment then arrives anyway and is appended after the next rung's init segment, and the
          // decoder fails on it (PIPELINE_ERROR_DECODE; 4 of 15 sessions under bulk in the lab). Off
          // until dash.js aborts what it abandons.
          ...(options.cmcd ? { abandonRequestsRule: { active: false } } : {}),
        },
      },
      cmcd: { enabled: options.cmcd, mode: 'query' },
    },
  });
  // The margin the player itself holds (its default unless set): a run's records say what the player used.
  emit('abr-settings', { safetyFactor: dash.getSettings().streaming?.abr?.throughput?.bandwidthSafetyFactor ?? null });
  const policy = options.policy;
  if (policy !== null) {
    dash.addRequestInterceptor(async (request) => {
      request.url = withPolicy(request.url, policy);
      return request;
    });
  }
  dash.on(
    dashjs.MediaPlayer.events.QUALITY_CHANGE_RENDERED,
    (event: { mediaType: string; newRepresentation?: { bandwidth?: number } }) => {
      if (event.mediaType === 'video' && event.newRepresentation?.bandwidth !== undefined)
        recordBitrate(event.newRepresentation.bandwidth);
    },
  );
  dash.on(dashjs.MediaPlayer.events.ERROR, (event: unknown) =>
    fail(`dash.js error: ${JSON.stringify(event).slice(0, 300)}`),
  );
  if (options.startSec === null) dash.initialize(video, options.url, true);
  else dash.initialize(video, options.url, true, options.startSec);
  return () => dash.destroy();
}

/**
 * Shaka Player: its own throughput estimator (an EWMA of fast and slow half-lives over samples of
 * at least 16 kB) and its own margins (up when 0.85 x its estimate reaches a variant's bandwidth,
 * down below 0.95 x). The rendered bitrate is the active variant's video bandwidth at each
 * adaptation (Shaka signals no rendered switch).
 */
function startShaka(options: PlaybackOptions): () => void {
  let stop = (): void => undefined;
  let stopped = false;
  void loadScript('lib/shaka-player.compiled.js').then(
    () => {
      if (!stopped) stop = startLoadedShaka(options);
    },
    () => fail('Shaka Player is not installed beside the origin (an optional dependency): npm install shaka-player'),
  );
  return () => {
    stopped = true;
    stop();
  };
}

/** A classic script, added once when first needed (Shaka's 830 kB are no page's load cost but its own sessions'). */
function loadScript(src: string): Promise<void> {
  const existing = document.querySelector<HTMLScriptElement>(`script[src="${src}"]`);
  const script = existing ?? document.createElement('script');
  if (existing?.dataset.loaded === '1') return Promise.resolve();
  const loaded = new Promise<void>((resolve, reject) => {
    script.addEventListener('load', () => {
      script.dataset.loaded = '1';
      resolve();
    });
    script.addEventListener('error', () => reject(new Error(`${src} did not load`)));
  });
  if (existing === null) {
    script.src = src;
    document.head.append(script);
  }
  return loaded;
}

function startLoadedShaka(options: PlaybackOptions): () => void {
  shaka.polyfill.installAll();
  if (!shaka.Player.isBrowserSupported()) {
    fail('Shaka Player needs Media Source Extensions, which this browser lacks');
    return () => undefined;
  }
  const player = new shaka.Player();
  player.configure({
    ...(options.bufferSeconds === null ? {} : { streaming: { bufferingGoal: options.bufferSeconds } }),
    ...(options.safetyFactor === null ? {} : { abr: { bandwidthUpgradeTarget: options.safetyFactor } }),
    ...(options.cmcd ? { cmcd: { enabled: true, useHeaders: false } } : {}),
  });
  emit('abr-settings', { safetyFactor: player.getConfiguration().abr.bandwidthUpgradeTarget });
  const policy = options.policy;
  if (policy !== null)
    player.getNetworkingEngine()?.registerRequestFilter((_type, request) => {
      request.uris = request.uris.map((uri) => withPolicy(uri, policy));
    });
  const onVariant = () => {
    const active = player.getVariantTracks().find((track) => track.active);
    const bitrateBps = active?.videoBandwidth ?? active?.bandwidth;
    if (bitrateBps !== undefined && bitrateBps !== null) recordBitrate(bitrateBps);
  };
  player.addEventListener('adaptation', onVariant);
  player.addEventListener('variantchanged', onVariant);
  player.addEventListener('error', (event) =>
    fail(`Shaka Player error: ${JSON.stringify((event as unknown as { detail?: unknown }).detail).slice(0, 300)}`),
  );
  void player
    .attach(video)
    .then(() => player.load(options.url, options.startSec))
    .then(onVariant)
    .catch((error: unknown) => fail(`Shaka Player could not load: ${JSON.stringify(error).slice(0, 300)}`));
  return () => void player.destroy();
}

function startHlsjs(options: PlaybackOptions): (() => void) | undefined {
  if (!Hls.isSupported()) {
    fail('hls.js needs Media Source Extensions, which this browser lacks');
    return undefined;
  }
  const policy = options.policy;
  const hls = new Hls({
    ...(options.bufferSeconds === null
      ? {}
      : { maxBufferLength: options.bufferSeconds, maxMaxBufferLength: options.bufferSeconds }),
    ...(options.safetyFactor === null ? {} : { abrBandWidthUpFactor: options.safetyFactor }),
    ...(options.startSec === null ? {} : { startPosition: options.startSec }),
    ...(options.cmcd ? { cmcd: { useHeaders: false } } : {}),
    ...(policy === null
      ? {}
      : { xhrSetup: (xhr: XMLHttpRequest, url: string) => xhr.open('GET', withPolicy(url, policy), true) }),
  });
  emit('abr-settings', { safetyFactor: hls.config.abrBandWidthUpFactor });
  hls.on(Hls.Events.LEVEL_SWITCHED, (_event, data) => {
    const level = hls.levels[data.level];
    if (level !== undefined) recordBitrate(level.bitrate);
  });
  hls.on(Hls.Events.ERROR, (_event, data) => {
    if (data.fatal) {
      // The HTTP status (0: no response) and URL say whether the origin, the network or the page failed.
      fail(
        `hls.js fatal error: ${data.type} ${data.details}` +
          (data.response === undefined
            ? ''
            : ` (HTTP ${data.response.code} for ${data.context?.url ?? data.url ?? '?'})`),
      );
      return;
    }
    if (data.details === Hls.ErrorDetails.BUFFER_STALLED_ERROR) {
      // Repeated during one stall; the stall itself is counted by the element and the watchdog.
      const snapshot = window.trickle;
      if (
        snapshot !== undefined &&
        openEpisode(snapshot.rebuffers) === undefined &&
        openEpisode(snapshot.stalls) === undefined
      )
        emit('hls-stall-error');
      return;
    }
    // Recoverable load errors (timeouts, retries) explain long rebuffers; the player carries on.
    emit('player-warning', { details: data.details, url: data.frag?.url ?? data.context?.url ?? null });
  });
  hls.loadSource(options.url);
  hls.attachMedia(video);
  return () => hls.destroy();
}

function play(options: PlaybackOptions): void {
  teardown?.();
  show('error', '');
  seeking = false;
  pendingSeek = options.seek;
  window.trickleEvents = [];
  window.trickle = {
    asset: options.asset,
    player: options.player,
    url: options.url,
    policy: options.policy,
    cmcd: options.cmcd,
    abr: options.abr,
    safetyFactor: options.safetyFactor,
    bufferSeconds: options.bufferSeconds,
    loadedAtMs: performance.now(),
    startupMs: null,
    rebuffers: [],
    stalls: [],
    videoFreezes: [],
    bitrateTimeline: [],
    switches: [],
    bitrateBps: null,
    playedSeconds: 0,
    slowPlayMs: 0,
    totalFrames: 0,
    droppedFrames: 0,
    ended: false,
    endedAtMs: null,
    errors: [],
  };
  emit('load', {
    player: options.player,
    url: options.url,
    policy: options.policy,
    cmcd: options.cmcd,
    abr: options.abr,
    safetyFactor: options.safetyFactor,
    bufferSeconds: options.bufferSeconds,
    startSec: options.startSec,
  });
  show('source', options.url);

  if (options.player === 'dashjs') teardown = startDashjs(options);
  else if (options.player === 'hlsjs') teardown = startHlsjs(options);
  else if (options.player === 'shaka') teardown = startShaka(options);
  else {
    // A media fragment: the element fetches from the start time's byte range on.
    video.src = `${withPolicy(options.url, options.policy)}${options.startSec === null ? '' : `#t=${options.startSec}`}`;
    teardown = () => {
      video.removeAttribute('src');
      video.load();
    };
  }
  void video.play().catch(() => undefined);
}

/** Where the media clock and the wall clock were last compared (slowPlayMs); a rebuffer's end restarts it. */
const playClock = { atMs: 0, time: 0 };

/**
 * Adds to slowPlayMs how far the media clock fell behind the wall clock since the last comparison, outside rebuffers:
 * signed while it moved (a reading's jitter either way cancels over a session), the whole interval while it stood
 * still with media in hand (the renderer's stop, not the delivery's). Standing still with nothing buffered is a
 * stop of the delivery's, left to the rebuffer and stall accounts.
 */
function comparePlayClock(snapshot: Snapshot, nowMs: number, time: number, playing: boolean): void {
  if (playing && openEpisode(snapshot.rebuffers) === undefined) {
    const elapsedMs = nowMs - playClock.atMs;
    if (time > playClock.time) snapshot.slowPlayMs += elapsedMs - ((time - playClock.time) * 1000) / video.playbackRate;
    else if (time === playClock.time && bufferAheadSec(time) >= mediaInHandSec) snapshot.slowPlayMs += elapsedMs;
  }
  playClock.atMs = nowMs;
  playClock.time = time;
}

video.addEventListener('playing', () => {
  const snapshot = window.trickle;
  if (snapshot === undefined) return;
  const nowMs = sinceLoadMs();
  if (snapshot.startupMs === null) {
    snapshot.startupMs = nowMs;
    emit('startup', { startupMs: Math.round(nowMs), currentTime: video.currentTime });
    show('startup', `${Math.round(nowMs)} ms`);
  }
  playClock.atMs = nowMs;
  playClock.time = video.currentTime;
  const open = openEpisode(snapshot.rebuffers);
  if (open !== undefined) {
    open.durationMs = nowMs - open.startMs;
    emit('rebuffer-end', { durationMs: Math.round(open.durationMs), currentTime: video.currentTime });
  }
});
video.addEventListener('waiting', () => {
  const snapshot = window.trickle;
  if (
    snapshot === undefined ||
    snapshot.startupMs === null ||
    seeking ||
    snapshot.ended ||
    openEpisode(snapshot.rebuffers) !== undefined ||
    // Within the tolerance of the end the end is coming, not a rebuffer (as the watchdog reads it): dash.js without
    // end of stream waits there, seeks back half a second and plays up to it again until it is taken as ended.
    withinEndTolerance(video.currentTime)
  )
    return;
  const confirmedByWatchdog = openEpisode(snapshot.stalls) !== undefined;
  snapshot.rebuffers.push({
    startMs: sinceLoadMs(),
    durationMs: null,
    confirmedByWatchdog,
    bufferAheadSec: confirmedByWatchdog ? bufferAheadSec(video.currentTime) : null,
  });
  emit('rebuffer-start', { currentTime: video.currentTime });
  show('rebuffers', String(snapshot.rebuffers.length));
});
video.addEventListener('seeking', () => {
  seeking = true;
  // What the end check reads, for a session that parks at its end without ending.
  const bufferedEndSec = video.buffered.length > 0 ? video.buffered.end(video.buffered.length - 1) : null;
  emit('seeking', {
    to: video.currentTime,
    paused: video.paused,
    durationSec: video.duration,
    readyState: video.readyState,
    bufferedEndSec,
  });
});
video.addEventListener('seeked', () => {
  seeking = false;
  emit('seeked', { at: video.currentTime });
});
function end(snapshot: Snapshot, atMs: number, byElement: boolean): void {
  // The last stretch up to the end is played too (the watchdog last read the position up to an interval ago); a
  // player parked at the end is at the furthest point it reached there.
  const time = byElement ? video.currentTime : atEndFurthestSec;
  comparePlayClock(snapshot, atMs, time, byElement);
  snapshot.playedSeconds = Math.max(snapshot.playedSeconds, time);
  snapshot.ended = true;
  snapshot.endedAtMs = atMs;
  closeEpisodes(atMs, snapshot.rebuffers, snapshot.stalls, snapshot.videoFreezes);
  emit('ended', { currentTime: video.currentTime, byElement });
}
video.addEventListener('ended', () => {
  const snapshot = window.trickle;
  if (snapshot === undefined || snapshot.ended) return;
  end(snapshot, sinceLoadMs(), true);
});
video.addEventListener('error', () =>
  fail(`media element error: ${video.error?.message ?? video.error?.code ?? 'unknown'}`),
);

/** Watchdog: what the element does, not what it says. */
let lastTime = 0;
let lastFrames = 0;
let timeStoppedAtMs: number | null = null;
let framesStoppedAtMs: number | null = null;
let atEndSinceMs: number | null = null;
/** The furthest time reached since `atEndSinceMs` (seeks to the end over and over stay at or below it). */
let atEndFurthestSec = 0;
setInterval(() => {
  const snapshot = window.trickle;
  if (snapshot === undefined) return;
  const nowMs = sinceLoadMs();
  const quality = video.getVideoPlaybackQuality();
  const time = video.currentTime;
  // Once ended the position stays where the session ended: dash.js parked without end of stream seeks back
  // half a second and plays up to the end again, which a later reading would take for less played.
  if (!snapshot.ended) snapshot.playedSeconds = time;
  snapshot.totalFrames = quality.totalVideoFrames;
  snapshot.droppedFrames = quality.droppedVideoFrames;
  if (pendingSeek !== null && snapshot.startupMs !== null && time >= pendingSeek.atSec) {
    emit('seek-requested', { from: time, to: pendingSeek.toSec });
    video.currentTime = pendingSeek.toSec;
    pendingSeek = null;
  }
  // Seeks in place do not reset this: the player that misses its end seeks to it every 200 ms. Paused
  // or not: nothing here pauses, and a dash.js session parked at 5.999999 of a 6 s MPD (seeking there
  // every 200 ms for 80 s, the duration finite and within reach) was never taken as ended, so the
  // element said paused there.
  const atEnd = snapshot.startupMs !== null && !snapshot.ended && withinEndTolerance(time);
  if (!atEnd) atEndSinceMs = null;
  else if (atEndSinceMs === null || time >= atEndFurthestSec + endProgressSec) {
    // Playing on towards the end (however slowly) leaves the end to the element.
    atEndSinceMs = nowMs;
    atEndFurthestSec = time;
  } else if (nowMs - atEndSinceMs >= endParkedMs) end(snapshot, atEndSinceMs, false);
  // Within the tolerance of the end the end is coming, not a stall.
  const watching = snapshot.startupMs !== null && !snapshot.ended && !video.paused && !seeking && !atEnd;
  const timeMoved = time !== lastTime;
  const framesMoved = quality.totalVideoFrames !== lastFrames;
  comparePlayClock(snapshot, nowMs, time, watching);
  lastTime = time;
  lastFrames = quality.totalVideoFrames;
  if (!watching) {
    timeStoppedAtMs = null;
    framesStoppedAtMs = null;
  } else {
    if (timeMoved) {
      timeStoppedAtMs = null;
      const stall = openEpisode(snapshot.stalls);
      if (stall !== undefined) {
        stall.durationMs = nowMs - stall.startMs;
        emit('stall-end', { durationMs: Math.round(stall.durationMs) });
      }
    } else {
      timeStoppedAtMs ??= nowMs - watchdogIntervalMs;
      if (nowMs - timeStoppedAtMs >= stallAfterMs && openEpisode(snapshot.stalls) === undefined) {
        snapshot.stalls.push({ startMs: timeStoppedAtMs, durationMs: null });
        const rebuffer = openEpisode(snapshot.rebuffers);
        if (rebuffer !== undefined) {
          rebuffer.confirmedByWatchdog = true;
          rebuffer.bufferAheadSec = bufferAheadSec(time);
        }
        emit('stall-start', { currentTime: time });
      }
    }
    if (timeMoved && !framesMoved && snapshot.player !== 'native') {
      framesStoppedAtMs ??= nowMs - watchdogIntervalMs;
      if (nowMs - framesStoppedAtMs >= stallAfterMs && openEpisode(snapshot.videoFreezes) === undefined) {
        snapshot.videoFreezes.push({ startMs: framesStoppedAtMs, durationMs: null });
        emit('video-freeze-start', { currentTime: time });
      }
    } else if (framesMoved) {
      framesStoppedAtMs = null;
      const freeze = openEpisode(snapshot.videoFreezes);
      if (freeze !== undefined) {
        freeze.durationMs = nowMs - freeze.startMs;
        emit('video-freeze-end', { durationMs: Math.round(freeze.durationMs) });
      }
    }
  }
  show('stalls', `${snapshot.stalls.length} / ${snapshot.videoFreezes.length}`);
  show('frames', `${quality.totalVideoFrames} / ${quality.droppedVideoFrames}`);
  show('buffer', `${bufferAheadSec(time).toFixed(1)} s`);
}, watchdogIntervalMs);

/** Seconds buffered from `time` to the end of the range that holds it (0 in a gap). */
function bufferAheadSec(time: number): number {
  const ranges = video.buffered;
  for (let i = 0; i < ranges.length; i++)
    if (ranges.start(i) <= time && time <= ranges.end(i)) return ranges.end(i) - time;
  return 0;
}

function playerFor(url: string): PlayerKind {
  const path = new URL(url).pathname;
  if (path.endsWith('.mpd')) return 'dashjs';
  if (path.endsWith('.m3u8')) return 'hlsjs';
  return 'native';
}

function linkFor(asset: AssetLinks, player: PlayerKind): string | null {
  if (player === 'dashjs' || player === 'shaka') return asset.links.dash;
  if (player === 'hlsjs') return asset.links.hls;
  return asset.links.progressive;
}

function parseOptions(params: URLSearchParams): Omit<PlaybackOptions, 'player' | 'url' | 'asset'> {
  const abr = params.get('abr') ?? 'dynamic';
  if (abr !== 'throughput' && abr !== 'bola' && abr !== 'dynamic')
    throw new Error(`abr must be throughput, bola or dynamic, not "${abr}"`);
  const safety = params.get('safetyFactor');
  const safetyFactor = safety === null ? null : Number(safety);
  if (safetyFactor !== null && !(safetyFactor > 0 && safetyFactor <= 1))
    throw new Error(`safetyFactor must be in (0, 1], not "${safety}"`);
  const buffer = params.get('bufferSeconds');
  const bufferSeconds = buffer === null ? null : Number(buffer);
  if (bufferSeconds !== null && !(bufferSeconds > 0))
    throw new Error(`bufferSeconds must be a positive number, not "${buffer}"`);
  const startText = params.get('start');
  const startSec = startText === null ? null : Number(startText);
  if (startSec !== null && !(startSec >= 0)) throw new Error(`start must be seconds >= 0, not "${startText}"`);
  const seekText = params.get('seek');
  let seek: PlaybackOptions['seek'] = null;
  if (seekText !== null) {
    const [atSec, toSec] = seekText.split(':').map(Number);
    if (seekText.split(':').length !== 2 || !(atSec! >= 0) || !(toSec! >= 0))
      throw new Error(`seek must be <at seconds>:<to seconds>, not "${seekText}"`);
    seek = { atSec: atSec!, toSec: toSec! };
  }
  return {
    policy: params.get('policy'),
    cmcd: params.get('cmcd') === '1',
    abr,
    safetyFactor,
    bufferSeconds,
    startSec,
    seek,
  };
}

async function main(): Promise<void> {
  const params = new URLSearchParams(window.location.search);
  let options: Omit<PlaybackOptions, 'player' | 'url' | 'asset'>;
  try {
    options = parseOptions(params);
  } catch (error) {
    window.trickle = undefined;
    show('error', (error as Error).message);
    window.trickleEvents.push({ atMs: 0, type: 'error', message: (error as Error).message });
    return;
  }
  const wantedPlayer = params.get('player');
  const explicitPlayer =
    wantedPlayer === 'dashjs' || wantedPlayer === 'hlsjs' || wantedPlayer === 'shaka' || wantedPlayer === 'native'
      ? wantedPlayer
      : null;
  const src = params.get('src');
  if (src !== null) {
    const url = new URL(src, window.location.href).href;
    const player = explicitPlayer ?? playerFor(url);
    playerSelect.value = player;
    play({ ...options, player, url, asset: null });
    return;
  }
  const response = await fetch(absolute('api/assets'));
  const { assets } = (await response.json()) as { assets: AssetLinks[] };
  if (assets.length === 0) {
    show('error', 'no assets: create the demo with "npx trickle media demo" and reload');
    return;
  }
  for (const asset of assets)
    assetSelect.add(new Option(`${asset.name}${asset.status === 'ready' ? '' : ` (${asset.status})`}`, asset.name));
  const wanted = params.get('asset');
  if (wanted !== null && assets.some((a) => a.name === wanted)) assetSelect.value = wanted;
  if (explicitPlayer !== null) playerSelect.value = explicitPlayer;
  const start = () => {
    const asset = assets.find((a) => a.name === assetSelect.value);
    if (asset === undefined) return;
    const player = playerSelect.value as PlayerKind;
    const relative = linkFor(asset, player);
    if (relative === null) {
      show(
        'error',
        `asset "${asset.name}" has ` +
          `no ${player === 'native' ? 'progressive MP4' : player === 'dashjs' ? 'DASH manifest' : 'HLS playlist'}`,
      );
      return;
    }
    const next = new URLSearchParams(params);
    next.set('asset', asset.name);
    next.set('player', player);
    history.replaceState(null, '', `?${next.toString()}`);
    play({ ...options, player, url: absolute(relative), asset: asset.name });
  };
  byId<HTMLFormElement>('controls').addEventListener('submit', (event) => {
    event.preventDefault();
    start();
  });
  start();
}

main().catch((error: unknown) => show('error', `cannot load the asset list: ${String(error)}`));
