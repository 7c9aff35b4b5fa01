/**
 * The /player/ page: plays any asset with dash.js, hls.js or a plain <video>, and keeps a small
 * QoE snapshot on `window.trickle` (startup, rebuffers, switches) that tests and people can read.
 * Startup is the first `playing`; a rebuffer is a `waiting` after it that is not part of a seek.
 */
import type * as DashJs from 'dashjs';
import type HlsClass from 'hls.js';

declare const dashjs: typeof DashJs;
declare const Hls: typeof HlsClass;

type PlayerKind = 'dashjs' | 'hlsjs' | 'native';

interface AssetLinks {
  readonly name: string;
  readonly status: string;
  readonly links: { readonly dash: string | null; readonly hls: string | null; readonly progressive: string | null };
}

interface Snapshot {
  asset: string;
  player: PlayerKind;
  url: string;
  loadedAtMs: number;
  startupMs: number | null;
  rebuffers: { startMs: number; durationMs: number | null }[];
  switches: { atMs: number; bitrateBps: number }[];
  bitrateBps: number | null;
  ended: boolean;
  errors: string[];
}

declare global {
  interface Window {
    trickle: Snapshot | undefined;
  }
}

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

const base = new URL('..', window.location.href);
const absolute = (relative: string): string => new URL(relative, base).href;

function show(id: string, text: string): void {
  byId(id).textContent = text;
}

function fail(message: string): void {
  window.trickle?.errors.push(message);
  show('error', message);
}

function urlFor(asset: AssetLinks, player: PlayerKind): string | null {
  if (player === 'dashjs') return asset.links.dash;
  if (player === 'hlsjs') return asset.links.hls;
  return asset.links.progressive;
}

function recordBitrate(bitrateBps: number): void {
  const snapshot = window.trickle;
  if (snapshot === undefined) return;
  if (snapshot.bitrateBps !== null && snapshot.bitrateBps !== bitrateBps) snapshot.switches.push({ atMs: performance.now() - snapshot.loadedAtMs, bitrateBps });
  snapshot.bitrateBps = bitrateBps;
  show('bitrate', `${(bitrateBps / 1e6).toFixed(2)} Mbit/s`);
  show('switches', String(snapshot.switches.length));
}

function play(asset: AssetLinks, player: PlayerKind): void {
  teardown?.();
  show('error', '');
  const relative = urlFor(asset, player);
  if (relative === null) {
    fail(`asset "${asset.name}" has no ${player === 'native' ? 'progressive MP4' : player === 'dashjs' ? 'DASH manifest' : 'HLS playlist'}`);
    return;
  }
  const url = absolute(relative);
  window.trickle = { asset: asset.name, player, url, loadedAtMs: performance.now(), startupMs: null, rebuffers: [], switches: [], bitrateBps: null, ended: false, errors: [] };
  show('source', url);
  history.replaceState(null, '', `?asset=${encodeURIComponent(asset.name)}&player=${player}`);

  if (player === 'dashjs') {
    const dash = dashjs.MediaPlayer().create();
    dash.initialize(video, url, true);
    dash.on(dashjs.MediaPlayer.events.QUALITY_CHANGE_RENDERED, (event: { mediaType: string; newRepresentation?: { bandwidth?: number } }) => {
      if (event.mediaType === 'video' && event.newRepresentation?.bandwidth !== undefined) recordBitrate(event.newRepresentation.bandwidth);
    });
    dash.on(dashjs.MediaPlayer.events.ERROR, (event: unknown) => fail(`dash.js error: ${JSON.stringify(event).slice(0, 300)}`));
    teardown = () => dash.destroy();
  } else if (player === 'hlsjs') {
    if (!Hls.isSupported()) {
      fail('hls.js needs Media Source Extensions, which this browser lacks');
      return;
    }
    const hls = new Hls();
    hls.on(Hls.Events.LEVEL_SWITCHED, (_event, data) => {
      const level = hls.levels[data.level];
      if (level !== undefined) recordBitrate(level.bitrate);
    });
    hls.on(Hls.Events.ERROR, (_event, data) => {
      if (data.fatal) fail(`hls.js fatal error: ${data.type} ${data.details}`);
    });
    hls.loadSource(url);
    hls.attachMedia(video);
    teardown = () => hls.destroy();
  } else {
    video.src = url;
    teardown = () => {
      video.removeAttribute('src');
      video.load();
    };
  }
  void video.play().catch(() => undefined);
}

video.addEventListener('playing', () => {
  const snapshot = window.trickle;
  if (snapshot === undefined) return;
  const nowMs = performance.now() - snapshot.loadedAtMs;
  if (snapshot.startupMs === null) {
    snapshot.startupMs = nowMs;
    show('startup', `${Math.round(nowMs)} ms`);
  }
  const open = snapshot.rebuffers[snapshot.rebuffers.length - 1];
  if (open !== undefined && open.durationMs === null) open.durationMs = nowMs - open.startMs;
});
video.addEventListener('waiting', () => {
  const snapshot = window.trickle;
  if (snapshot === undefined || snapshot.startupMs === null || seeking) return;
  snapshot.rebuffers.push({ startMs: performance.now() - snapshot.loadedAtMs, durationMs: null });
  show('rebuffers', String(snapshot.rebuffers.length));
});
video.addEventListener('seeking', () => {
  seeking = true;
});
video.addEventListener('seeked', () => {
  seeking = false;
});
video.addEventListener('ended', () => {
  const snapshot = window.trickle;
  if (snapshot === undefined) return;
  snapshot.ended = true;
  const open = snapshot.rebuffers[snapshot.rebuffers.length - 1];
  if (open !== undefined && open.durationMs === null) open.durationMs = performance.now() - snapshot.loadedAtMs - open.startMs;
});
video.addEventListener('error', () => fail(`media element error: ${video.error?.message ?? video.error?.code ?? 'unknown'}`));
setInterval(() => {
  const ranges = video.buffered;
  let ahead = 0;
  for (let i = 0; i < ranges.length; i++) if (ranges.start(i) <= video.currentTime && video.currentTime <= ranges.end(i)) ahead = ranges.end(i) - video.currentTime;
  show('buffer', `${ahead.toFixed(1)} s`);
}, 500);

async function main(): Promise<void> {
  const response = await fetch(absolute('api/assets'));
  const { assets } = (await response.json()) as { assets: AssetLinks[] };
  if (assets.length === 0) {
    fail('no assets: create the demo with "npx trickle media demo" and reload');
    return;
  }
  for (const asset of assets) assetSelect.add(new Option(`${asset.name}${asset.status === 'ready' ? '' : ` (${asset.status})`}`, asset.name));
  const params = new URLSearchParams(window.location.search);
  const wanted = params.get('asset');
  if (wanted !== null && assets.some((a) => a.name === wanted)) assetSelect.value = wanted;
  const wantedPlayer = params.get('player');
  if (wantedPlayer === 'dashjs' || wantedPlayer === 'hlsjs' || wantedPlayer === 'native') playerSelect.value = wantedPlayer;
  const start = () => {
    const asset = assets.find((a) => a.name === assetSelect.value);
    if (asset !== undefined) play(asset, playerSelect.value as PlayerKind);
  };
  byId<HTMLFormElement>('controls').addEventListener('submit', (event) => {
    event.preventDefault();
    start();
  });
  start();
}

main().catch((error: unknown) => fail(`cannot load the asset list: ${String(error)}`));
