/**
 * The /player/ page's live charts: what pacing does to each segment, drawn as the video plays
 * (Vega-Lite through vega-embed, the charting library of the reports; the page works without it).
 *  - per video response: the rate it arrived at (Resource Timing), its own media bitrate and the
 *    rate the origin aimed at (the origin's flow record for it, from `../api/flows`; audio
 *    segments, known from the asset's index, are left out);
 *  - the buffer ahead of the playhead, and the bitrate being played;
 *  - the congestion-window cap the kernel applied to each response (the flow record's clamp).
 * Responses and records are matched by file and start time (a record's start is when the origin
 * began the response; Resource Timing's when the browser asked). Refreshed every 2 s; `charts=0`
 * in the page's query turns them off (the e2e harness does: a measured browser only plays).
 */

interface VegaView {
  change(name: string, changes: unknown): VegaView;
  runAsync(): Promise<unknown>;
}
interface VegaGlobals {
  vegaEmbed?: (element: HTMLElement, spec: object, options: object) => Promise<{ view: VegaView }>;
  vega?: { changeset(): { remove(predicate: () => boolean): { insert(rows: readonly object[]): unknown } } };
}

/** What the page keeps on window.trickle (player.ts) that the charts read. */
interface PlayerState {
  readonly asset: string | null;
  readonly loadedAtMs: number;
  readonly bitrateTimeline: readonly { atMs: number; bitrateBps: number }[];
}

interface Summary {
  readonly mean: number;
}
interface FlowRecordView {
  readonly startedAtEpochMs: number;
  readonly asset: string;
  readonly file: string;
  readonly rendition: string | null;
  readonly policy: string;
  readonly backend: string;
  readonly targetRateBps: Summary | null;
  readonly mediaRateBps: Summary | null;
  /** Only a cwnd clamp's part has packets. */
  readonly enforcer: {
    readonly kind: string;
    readonly appliedClampPackets?: Summary | null;
    readonly clampPackets?: Summary | null;
  };
}

const refreshMs = 2000;
const bufferSampleMs = 500;
const series = {
  arrived: 'arrived at (download rate)',
  media: "segment's own bitrate",
  aimed: 'rate the origin aimed at',
} as const;
const globals = window as unknown as VegaGlobals & {
  trickle?: PlayerState;
  trickleCharts?: { updates: number; responses: number; records: number; clampPoints: number };
};
const video = document.getElementById('video') as HTMLVideoElement;
const note = document.getElementById('charts-note') as HTMLElement;
const flowsUrl = new URL('../api/flows', window.location.href);
// Chromium keeps 250 resource entries by default: a session of segments and their audio outgrows it.
performance.setResourceTimingBufferSize(20_000);

function chartSpec(dataName: string, mark: object, encoding: object, extra: object = {}): object {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: 620,
    height: 180,
    padding: { left: 12, top: 6, right: 6, bottom: 6 },
    data: { name: dataName },
    mark,
    encoding: { x: { field: 'atSec', type: 'quantitative', title: 'seconds since the player started' }, ...encoding },
    ...extra,
  };
}

const charts: { id: string; data: string; spec: object }[] = [
  {
    id: 'chart-rates',
    data: 'rates',
    // Log scale: an unthrottled segment arrives at hundreds of Mbit/s, a paced one near its own few.
    spec: chartSpec(
      'rates',
      { type: 'line', point: true },
      {
        y: {
          field: 'mbps',
          type: 'quantitative',
          title: 'Mbit/s (log scale)',
          scale: { type: 'log' },
          axis: { tickCount: 5, format: '~g' },
        },
        color: {
          field: 'series',
          type: 'nominal',
          title: null,
          scale: { domain: Object.values(series) },
          legend: { orient: 'top' },
        },
        tooltip: [{ field: 'file' }, { field: 'series' }, { field: 'mbps', format: '.2f' }, { field: 'policy' }],
      },
    ),
  },
  {
    id: 'chart-buffer',
    data: 'buffer',
    spec: chartSpec(
      'buffer',
      { type: 'area', line: true, opacity: 0.3 },
      { y: { field: 'seconds', type: 'quantitative', title: 'buffer ahead (s)' } },
    ),
  },
  {
    id: 'chart-rendition',
    data: 'rendition',
    spec: chartSpec(
      'rendition',
      { type: 'line', interpolate: 'step-after', point: true },
      { y: { field: 'mbps', type: 'quantitative', title: 'bitrate played (Mbit/s)' } },
    ),
  },
  {
    id: 'chart-clamp',
    data: 'clamp',
    spec: chartSpec(
      'clamp',
      { type: 'point', filled: true },
      {
        y: { field: 'packets', type: 'quantitative', title: 'cwnd cap (packets)' },
        color: { field: 'backend', type: 'nominal', title: 'applied by', legend: { orient: 'top' } },
        tooltip: [{ field: 'file' }, { field: 'packets', format: '.1f' }, { field: 'backend' }],
      },
    ),
  },
];

const bufferRows: { atSec: number; seconds: number }[] = [];
let records: FlowRecordView[] = [];
let recordsReachable = true;
/** The asset's audio renditions (from its index): their segments ride along and are left out. */
let audio: { asset: string; ids: Set<string> } | undefined;

async function refreshAudio(asset: string): Promise<void> {
  if (audio?.asset === asset) return;
  audio = { asset, ids: new Set() };
  const response = await fetch(
    new URL(`../api/assets/${encodeURIComponent(asset)}?segments=0`, window.location.href),
  ).catch(() => undefined);
  if (response?.ok !== true) return;
  const index = (await response.json()) as { renditions?: { id: string; kind: string }[] };
  audio.ids = new Set(
    (index.renditions ?? []).filter((rendition) => rendition.kind === 'audio').map((rendition) => rendition.id),
  );
}

function bufferAhead(): number {
  const time = video.currentTime;
  for (let i = 0; i < video.buffered.length; i++)
    if (video.buffered.start(i) <= time && time <= video.buffered.end(i)) return video.buffered.end(i) - time;
  return 0;
}

function loadEpochMs(state: PlayerState): number {
  return performance.timeOrigin + state.loadedAtMs;
}

/** The media responses the browser fetched since the player started, matched to the origin's records. */
function responses(
  state: PlayerState,
): { atSec: number; file: string; arrivedMbps: number; record: FlowRecordView | undefined }[] {
  const startMs = loadEpochMs(state);
  const byFile = new Map<string, FlowRecordView[]>();
  for (const record of records) {
    const key = `${record.asset}/${record.file}`;
    const list = byFile.get(key);
    if (list === undefined) byFile.set(key, [record]);
    else list.push(record);
  }
  const rows: { atSec: number; file: string; arrivedMbps: number; record: FlowRecordView | undefined }[] = [];
  for (const entry of performance.getEntriesByType('resource') as PerformanceResourceTiming[]) {
    const path = new URL(entry.name).pathname;
    const startedMs = performance.timeOrigin + entry.startTime;
    if (
      !/\/media\/[^/]+\/[^/]+\.(m4s|mp4|ts)$/.test(path) ||
      /init/.test(path) ||
      entry.responseEnd <= entry.requestStart ||
      startedMs < startMs
    )
      continue;
    const [asset, file] = path.split('/').slice(-2) as [string, string];
    let record: FlowRecordView | undefined;
    for (const candidate of byFile.get(`${asset}/${file}`) ?? []) {
      if (Math.abs(candidate.startedAtEpochMs - startedMs) > 3000) continue;
      if (
        record === undefined ||
        Math.abs(candidate.startedAtEpochMs - startedMs) < Math.abs(record.startedAtEpochMs - startedMs)
      )
        record = candidate;
    }
    if (record?.rendition != null && audio?.ids.has(record.rendition) === true) continue;
    const bytes = entry.encodedBodySize > 0 ? entry.encodedBodySize : entry.transferSize;
    rows.push({
      atSec: (startedMs - startMs) / 1000,
      file,
      arrivedMbps: (bytes * 8) / ((entry.responseEnd - entry.requestStart) * 1000),
      record,
    });
  }
  return rows;
}

async function refreshRecords(state: PlayerState): Promise<void> {
  if (!recordsReachable) return;
  flowsUrl.searchParams.set('since', String(Math.floor(loadEpochMs(state) - 5000)));
  flowsUrl.searchParams.set('limit', '5000');
  const response = await fetch(flowsUrl).catch(() => undefined);
  if (response === undefined || !response.ok) {
    // With an admin listener the records live only there (they carry client addresses).
    recordsReachable = false;
    note.textContent =
      "The origin's flow records are not served here (an admin port, or another origin): " +
      'the rates aimed at and the clamp are not shown.';
    return;
  }
  records = ((await response.json()) as { flows: FlowRecordView[] }).flows;
}

async function main(): Promise<void> {
  if (new URLSearchParams(window.location.search).get('charts') === '0') {
    document.getElementById('charts')!.hidden = true;
    note.textContent = 'Live charts are off (charts=0).';
    return;
  }
  const { vegaEmbed, vega } = globals;
  if (vegaEmbed === undefined || vega === undefined) {
    note.textContent = 'Live charts need Vega beside the origin: npm install vega vega-lite vega-embed';
    return;
  }
  const views = new Map<string, VegaView>();
  for (const chart of charts)
    views.set(
      chart.data,
      (await vegaEmbed(document.getElementById(chart.id)!, chart.spec, { actions: false, renderer: 'svg' })).view,
    );
  globals.trickleCharts = { updates: 0, responses: 0, records: 0, clampPoints: 0 };
  let lastLoadMs = -1;

  setInterval(() => {
    const state = globals.trickle;
    if (state === undefined) return;
    if (state.loadedAtMs !== lastLoadMs) {
      bufferRows.length = 0;
      lastLoadMs = state.loadedAtMs;
    }
    bufferRows.push({ atSec: (performance.now() - state.loadedAtMs) / 1000, seconds: bufferAhead() });
    if (bufferRows.length > 2400) bufferRows.splice(0, bufferRows.length - 2400);
  }, bufferSampleMs);

  const update = async (): Promise<void> => {
    const state = globals.trickle;
    if (state === undefined) return;
    if (state.asset !== null) await refreshAudio(state.asset);
    await refreshRecords(state);
    const fetched = responses(state);
    const rates = fetched.flatMap((response) => {
      const policy = response.record?.policy ?? '';
      const rows: { atSec: number; series: string; mbps: number; file: string; policy: string }[] = [
        { atSec: response.atSec, series: series.arrived, mbps: response.arrivedMbps, file: response.file, policy },
      ];
      if (response.record?.mediaRateBps != null)
        rows.push({
          atSec: response.atSec,
          series: series.media,
          mbps: response.record.mediaRateBps.mean / 1e6,
          file: response.file,
          policy,
        });
      if (response.record?.targetRateBps != null)
        rows.push({
          atSec: response.atSec,
          series: series.aimed,
          mbps: response.record.targetRateBps.mean / 1e6,
          file: response.file,
          policy,
        });
      return rows;
    });
    const clamp = fetched.flatMap((response) => {
      const enforcer = response.record?.enforcer;
      const packets = enforcer?.appliedClampPackets ?? enforcer?.clampPackets ?? null;
      return packets === null
        ? []
        : [{ atSec: response.atSec, packets: packets.mean, backend: response.record!.backend, file: response.file }];
    });
    const rendition = state.bitrateTimeline.map((point) => ({
      atSec: point.atMs / 1000,
      mbps: point.bitrateBps / 1e6,
    }));
    // The bitrate in force now, so the step runs to the present.
    if (rendition.length > 0)
      rendition.push({
        atSec: (performance.now() - state.loadedAtMs) / 1000,
        mbps: rendition[rendition.length - 1]!.mbps,
      });
    const replace = (name: string, rows: readonly object[]) =>
      views
        .get(name)!
        .change(
          name,
          vega
            .changeset()
            .remove(() => true)
            .insert(rows),
        )
        .runAsync();
    await Promise.all([
      replace('rates', rates),
      replace('buffer', bufferRows),
      replace('rendition', rendition),
      replace('clamp', clamp),
    ]);
    globals.trickleCharts = {
      updates: globals.trickleCharts!.updates + 1,
      responses: fetched.length,
      records: fetched.filter((r) => r.record !== undefined).length,
      clampPoints: clamp.length,
    };
  };
  const loop = (): void => {
    void update()
      .catch((error: unknown) => (note.textContent = `charts: ${String(error)}`))
      .finally(() => setTimeout(loop, refreshMs));
  };
  loop();
}

void main();
