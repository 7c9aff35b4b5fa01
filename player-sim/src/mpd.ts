/** DASH MPD -> segment file names and durations, per representation (SegmentTemplate, with or without SegmentTimeline). */
import { XMLParser } from 'fast-xml-parser';
import { SimError } from './errors.js';

export interface MpdRepresentation {
  readonly id: string;
  readonly kind: 'video' | 'audio' | 'other';
  readonly bandwidthBps: number;
  readonly heightPx: number | undefined;
  readonly segments: readonly { file: string; durationSec: number }[];
}

type Node = Record<string, unknown>;
const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', isArray: (name) => ['Period', 'AdaptationSet', 'Representation', 'S'].includes(name) });

const list = (node: Node | undefined, name: string): Node[] => (node?.[name] as Node[] | undefined) ?? [];
const one = (node: Node | undefined, name: string): Node | undefined => {
  const value = node?.[name];
  return (Array.isArray(value) ? value[0] : value) as Node | undefined;
};
const attr = (node: Node | undefined, name: string): string | undefined => (node?.[`@${name}`] === undefined ? undefined : String(node[`@${name}`]));

function durationSec(iso: string | undefined): number | undefined {
  if (iso === undefined) return undefined;
  const m = /^PT(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?$/.exec(iso);
  return m === null ? undefined : Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

function fill(template: string, id: string, number: number, time: number, bandwidth: number): string {
  return template.replace(/\$(RepresentationID|Number|Time|Bandwidth|)(?:%0(\d+)d)?\$/g, (_m, name: string, width: string | undefined) => {
    if (name === '') return '$';
    const value = name === 'RepresentationID' ? id : String(name === 'Number' ? number : name === 'Time' ? time : bandwidth);
    return width === undefined || name === 'RepresentationID' ? value : value.padStart(Number(width), '0');
  });
}

export function parseMpdSegments(text: string, source: string): MpdRepresentation[] {
  let mpd: Node | undefined;
  try {
    mpd = one(parser.parse(text, true) as Node, 'MPD');
  } catch (error) {
    throw new SimError('SIM_ERR_MANIFEST', `${source}: not well-formed XML: ${(error as Error).message}`, { cause: error });
  }
  const period = list(mpd, 'Period')[0];
  if (mpd === undefined || period === undefined) throw new SimError('SIM_ERR_MANIFEST', `${source}: no MPD/Period`);
  const totalSec = durationSec(attr(period, 'duration')) ?? durationSec(attr(mpd, 'mediaPresentationDuration'));
  const out: MpdRepresentation[] = [];
  for (const set of list(period, 'AdaptationSet')) {
    for (const rep of list(set, 'Representation')) {
      const id = attr(rep, 'id') ?? '';
      const template = { ...(one(set, 'SegmentTemplate') ?? {}), ...(one(rep, 'SegmentTemplate') ?? {}) } as Node;
      const media = attr(template, 'media');
      if (media === undefined) throw new SimError('SIM_ERR_MANIFEST', `${source}: representation ${id} has no SegmentTemplate@media`);
      const timescale = Number(attr(template, 'timescale') ?? 1);
      const bandwidth = Number(attr(rep, 'bandwidth') ?? 0);
      let number = Number(attr(template, 'startNumber') ?? 1);
      const segments: { file: string; durationSec: number }[] = [];
      const timeline = one(template, 'SegmentTimeline');
      if (timeline !== undefined) {
        let time = 0;
        for (const s of list(timeline, 'S')) {
          const d = Number(attr(s, 'd'));
          time = attr(s, 't') === undefined ? time : Number(attr(s, 't'));
          let repeat = Number(attr(s, 'r') ?? 0);
          if (repeat < 0) repeat = Math.max(0, Math.ceil(((totalSec ?? 0) * timescale - time) / d) - 1);
          for (let k = 0; k <= repeat; k++, number++, time += d) segments.push({ file: fill(media, id, number, time, bandwidth), durationSec: d / timescale });
        }
      } else {
        const d = Number(attr(template, 'duration'));
        if (!(d > 0) || totalSec === undefined) throw new SimError('SIM_ERR_MANIFEST', `${source}: representation ${id} needs a SegmentTimeline or a duration`);
        const count = Math.ceil((totalSec * timescale) / d - 1e-9);
        for (let k = 0; k < count; k++) segments.push({ file: fill(media, id, number + k, k * d, bandwidth), durationSec: Math.min(d / timescale, totalSec - (k * d) / timescale) });
      }
      const contentType = attr(set, 'contentType') ?? (attr(rep, 'mimeType') ?? attr(set, 'mimeType') ?? '').split('/')[0];
      out.push({ id, kind: contentType === 'video' ? 'video' : contentType === 'audio' ? 'audio' : 'other', bandwidthBps: bandwidth, heightPx: attr(rep, 'height') === undefined ? undefined : Number(attr(rep, 'height')), segments });
    }
  }
  return out;
}
