/**
 * DASH MPD reading: expands SegmentTemplate (with or without SegmentTimeline) and SegmentList into
 * the per-representation list of init and media segment files the index needs.
 */
import { XMLParser } from 'fast-xml-parser';
import { OriginError } from '../errors.js';
import type { ManifestRendition } from './manifest.js';

type XmlNode = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  isArray: (name) => ['Period', 'AdaptationSet', 'Representation', 'S', 'SegmentURL', 'BaseURL'].includes(name),
});

/** ISO 8601 durations as used by DASH, e.g. `PT1M30.5S`, `P1DT2H`. */
export function parseIsoDurationSec(value: string): number {
  const match = /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(value.trim());
  if (match === null || value.trim() === 'P' || value.trim() === 'PT') throw new Error(`not an ISO 8601 duration: "${value}"`);
  const [, days, hours, minutes, seconds] = match;
  return Number(days ?? 0) * 86400 + Number(hours ?? 0) * 3600 + Number(minutes ?? 0) * 60 + Number(seconds ?? 0);
}

/** Fills a DASH template ($RepresentationID$, $Number%05d$, $Time$, $Bandwidth$, $$). */
export function fillTemplate(template: string, values: { representationId: string; number?: number; time?: number; bandwidth?: number }): string {
  return template.replace(/\$(RepresentationID|Number|Time|Bandwidth|)(%0(\d+)d)?\$/g, (_whole, name: string, _format, width: string | undefined) => {
    if (name === '') return '$';
    let value: string;
    if (name === 'RepresentationID') return values.representationId;
    if (name === 'Number') value = String(values.number ?? 0);
    else if (name === 'Time') value = String(values.time ?? 0);
    else value = String(values.bandwidth ?? 0);
    return width === undefined ? value : value.padStart(Number(width), '0');
  });
}

function attr(node: XmlNode | undefined, name: string): string | undefined {
  const value = node?.[`@${name}`];
  return value === undefined ? undefined : String(value);
}

function numberAttr(node: XmlNode | undefined, name: string): number | undefined {
  const value = attr(node, name);
  if (value === undefined) return undefined;
  const parsed = Number(value);
  return Number.isFinite(parsed) ? parsed : undefined;
}

function child(node: XmlNode | undefined, name: string): XmlNode | undefined {
  const value = node?.[name];
  if (Array.isArray(value)) return value[0] as XmlNode | undefined;
  return value as XmlNode | undefined;
}

function children(node: XmlNode | undefined, name: string): XmlNode[] {
  const value = node?.[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]) as XmlNode[];
}

/** Attributes of a SegmentTemplate after inheritance (Representation overrides AdaptationSet). */
function mergedTemplate(adaptation: XmlNode, representation: XmlNode): XmlNode | undefined {
  const outer = child(adaptation, 'SegmentTemplate');
  const inner = child(representation, 'SegmentTemplate');
  if (outer === undefined && inner === undefined) return undefined;
  return { ...(outer ?? {}), ...(inner ?? {}) };
}

export function parseMpd(text: string, source: string): { renditions: ManifestRendition[]; durationSec: number | undefined } {
  let document: XmlNode;
  try {
    document = parser.parse(text, true) as XmlNode;
  } catch (error) {
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: MPD is not well-formed XML: ${(error as Error).message}`, { file: source }, { cause: error });
  }
  const mpd = child(document, 'MPD');
  if (mpd === undefined) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: no MPD element`, { file: source });
  const periods = children(mpd, 'Period');
  if (periods.length !== 1) {
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: ${periods.length} periods; the index supports single-period MPDs`, { file: source });
  }
  const period = periods[0]!;
  const presentation = attr(mpd, 'mediaPresentationDuration');
  const periodDuration = attr(period, 'duration');
  let durationSec: number | undefined;
  try {
    durationSec = periodDuration !== undefined ? parseIsoDurationSec(periodDuration) : presentation !== undefined ? parseIsoDurationSec(presentation) : undefined;
  } catch (error) {
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: ${(error as Error).message}`, { file: source }, { cause: error });
  }

  const renditions: ManifestRendition[] = [];
  for (const adaptation of children(period, 'AdaptationSet')) {
    for (const representation of children(adaptation, 'Representation')) {
      const id = attr(representation, 'id');
      if (id === undefined) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: Representation without id`, { file: source });
      const mimeType = attr(representation, 'mimeType') ?? attr(adaptation, 'mimeType') ?? '';
      const contentType = attr(adaptation, 'contentType') ?? mimeType.split('/')[0] ?? '';
      const kind = contentType === 'video' ? 'video' : contentType === 'audio' ? 'audio' : 'other';
      const bandwidth = numberAttr(representation, 'bandwidth');
      const base = {
        id,
        kind,
        declaredBandwidthBps: bandwidth,
        width: numberAttr(representation, 'width') ?? numberAttr(adaptation, 'width'),
        height: numberAttr(representation, 'height') ?? numberAttr(adaptation, 'height'),
        codecs: attr(representation, 'codecs') ?? attr(adaptation, 'codecs'),
      } as const;
      renditions.push({ ...base, ...segmentsOf(adaptation, representation, id, bandwidth, durationSec, source) });
    }
  }
  return { renditions, durationSec };
}

function segmentsOf(
  adaptation: XmlNode,
  representation: XmlNode,
  representationId: string,
  bandwidth: number | undefined,
  periodDurationSec: number | undefined,
  source: string,
): Pick<ManifestRendition, 'initFile' | 'segments'> {
  const template = mergedTemplate(adaptation, representation);
  if (template !== undefined) {
    const timescale = numberAttr(template, 'timescale') ?? 1;
    const startNumber = numberAttr(template, 'startNumber') ?? 1;
    const media = attr(template, 'media');
    const initialization = attr(template, 'initialization');
    if (media === undefined) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: SegmentTemplate without media`, { file: source });
    const initFile = initialization === undefined ? undefined : fillTemplate(initialization, { representationId, bandwidth: bandwidth ?? 0 });
    const segments: ManifestRendition['segments'][number][] = [];
    const timeline = child(template, 'SegmentTimeline');
    if (timeline !== undefined) {
      let time = 0;
      let number = startNumber;
      const entries = children(timeline, 'S');
      entries.forEach((entry, index) => {
        const d = numberAttr(entry, 'd');
        if (d === undefined || d <= 0) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: SegmentTimeline S without a positive d`, { file: source });
        time = numberAttr(entry, 't') ?? time;
        let repeat = numberAttr(entry, 'r') ?? 0;
        if (repeat < 0) {
          const next = entries[index + 1];
          const endTicks = numberAttr(next, 't') ?? (periodDurationSec ?? 0) * timescale;
          repeat = Math.max(0, Math.ceil((endTicks - time) / d) - 1);
        }
        for (let k = 0; k <= repeat; k++) {
          segments.push({ file: fillTemplate(media, { representationId, number, time, bandwidth: bandwidth ?? 0 }), number, manifestStartSec: time / timescale, manifestDurationSec: d / timescale });
          time += d;
          number++;
        }
      });
    } else {
      const duration = numberAttr(template, 'duration');
      if (duration === undefined || periodDurationSec === undefined) {
        throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: SegmentTemplate needs a SegmentTimeline, or a duration and a known period length`, { file: source });
      }
      const count = Math.ceil((periodDurationSec * timescale) / duration - 1e-9);
      for (let k = 0; k < count; k++) {
        const number = startNumber + k;
        const startTicks = k * duration;
        segments.push({
          file: fillTemplate(media, { representationId, number, time: startTicks, bandwidth: bandwidth ?? 0 }),
          number,
          manifestStartSec: startTicks / timescale,
          manifestDurationSec: Math.min(duration / timescale, periodDurationSec - startTicks / timescale),
        });
      }
    }
    return { initFile, segments };
  }

  const list = child(representation, 'SegmentList') ?? child(adaptation, 'SegmentList');
  if (list !== undefined) {
    const timescale = numberAttr(list, 'timescale') ?? 1;
    const duration = numberAttr(list, 'duration') ?? 0;
    const initFile = attr(child(list, 'Initialization'), 'sourceURL');
    const segments = children(list, 'SegmentURL').map((segment, k) => {
      const file = attr(segment, 'media');
      if (file === undefined) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: SegmentURL without media`, { file: source });
      return { file, number: k + 1, manifestStartSec: (k * duration) / timescale, manifestDurationSec: duration / timescale };
    });
    return { initFile, segments };
  }
  throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: Representation ${representationId} has neither SegmentTemplate nor SegmentList (SegmentBase is not indexed)`, { file: source });
}
