/**
 * The repository's one DASH MPD reader (the origin's index and the player simulator both use it,
 * the simulator through `@trickle/origin/mpd`; no fastify here): a single-period MPD into the
 * per-representation list of init and media segment files. SegmentTemplate (inherited Period ->
 * AdaptationSet -> Representation) with `$Number$` or `$Time$` and a SegmentTimeline or a
 * duration, and SegmentList; SegmentBase (one file addressed by byte ranges) and multi-period MPDs
 * are refused with a clear error. ISO 8601 durations and template filling are the CTA common media
 * library's.
 */
import { decodeIso8601Duration } from '@svta/common-media-library/iso8601';
import { processUriTemplate } from '@svta/common-media-library/dash';
import { XMLParser } from 'fast-xml-parser';
import { OriginError } from '../errors.js';
import type { ManifestRendition } from './manifest.js';

export type { ManifestRendition, ManifestSegment } from './manifest.js';

type XmlNode = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  isArray: (name) => ['Period', 'AdaptationSet', 'Representation', 'S', 'SegmentURL', 'BaseURL'].includes(name),
});

/** An ISO 8601 duration (`PT1M30.5S`, `P0Y0M0DT0H2M0S`) in seconds; throws on anything else. */
export function parseIsoDurationSec(value: string): number {
  const seconds = decodeIso8601Duration(value.trim());
  if (!Number.isFinite(seconds) || seconds < 0) throw new Error(`not an ISO 8601 duration: "${value}"`);
  return seconds;
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

/** A SegmentTemplate's attributes and children after inheritance (the inner level wins). */
function mergedTemplate(levels: readonly XmlNode[]): XmlNode | undefined {
  const templates = levels.map((level) => child(level, 'SegmentTemplate')).filter((template) => template !== undefined);
  return templates.length === 0 ? undefined : Object.assign({}, ...templates);
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
      const levels = [period, adaptation, representation] as const;
      renditions.push({ ...base, ...underBaseUrl(segmentsOf(levels, id, bandwidth, durationSec, source), levels, source) });
    }
  }
  return { renditions, durationSec };
}

/**
 * The files under the levels' BaseURLs (Period, AdaptationSet, Representation, each resolved
 * against the one above), as paths relative to the MPD. An absolute BaseURL is refused: the
 * files must be the asset's own.
 */
function underBaseUrl(files: Pick<ManifestRendition, 'initFile' | 'segments'>, levels: readonly XmlNode[], source: string): Pick<ManifestRendition, 'initFile' | 'segments'> {
  const bases = levels.map((level) => children(level, 'BaseURL')[0]).filter((base) => base !== undefined);
  if (bases.length === 0) return files;
  const mpdBase = new URL('http://mpd.invalid/');
  let base = mpdBase;
  for (const node of bases) {
    const text = String(typeof node === 'object' && node !== null ? ((node as XmlNode)['#text'] ?? '') : node).trim();
    base = new URL(text, base);
    if (base.origin !== mpdBase.origin) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: BaseURL "${text}" is absolute; the files must be beside the MPD`, { file: source });
  }
  const resolve = (file: string) => decodeURIComponent(new URL(file, base).pathname.slice(1));
  return { initFile: files.initFile === undefined ? undefined : resolve(files.initFile), segments: files.segments.map((segment) => ({ ...segment, file: resolve(segment.file) })) };
}

function segmentsOf(
  levels: readonly [period: XmlNode, adaptation: XmlNode, representation: XmlNode],
  representationId: string,
  bandwidth: number | undefined,
  periodDurationSec: number | undefined,
  source: string,
): Pick<ManifestRendition, 'initFile' | 'segments'> {
  const [period, adaptation, representation] = levels;
  const template = mergedTemplate(levels);
  if (template !== undefined) {
    const timescale = numberAttr(template, 'timescale') ?? 1;
    const startNumber = numberAttr(template, 'startNumber') ?? 1;
    const media = attr(template, 'media');
    const initialization = attr(template, 'initialization');
    if (media === undefined) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: SegmentTemplate without media`, { file: source });
    const initFile = initialization === undefined ? undefined : processUriTemplate(initialization, representationId, null, null, bandwidth ?? 0, null);
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
          segments.push({ file: processUriTemplate(media, representationId, number, null, bandwidth ?? 0, time), number, manifestStartSec: time / timescale, manifestDurationSec: d / timescale });
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
          file: processUriTemplate(media, representationId, number, null, bandwidth ?? 0, startTicks),
          number,
          manifestStartSec: startTicks / timescale,
          manifestDurationSec: Math.min(duration / timescale, periodDurationSec - startTicks / timescale),
        });
      }
    }
    return { initFile, segments };
  }

  const list = child(representation, 'SegmentList') ?? child(adaptation, 'SegmentList') ?? child(period, 'SegmentList');
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
  const segmentBase = [representation, adaptation, period].some((level) => child(level, 'SegmentBase') !== undefined);
  throw new OriginError(
    'ORIGIN_ERR_CORRUPT_MEDIA',
    segmentBase
      ? `${source}: Representation ${representationId} uses SegmentBase (one file addressed by byte ranges), which is not supported: package with segment files (SegmentTemplate or SegmentList)`
      : `${source}: Representation ${representationId} has neither SegmentTemplate nor SegmentList`,
    { file: source },
  );
}
