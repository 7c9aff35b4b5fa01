/**
 * The repository's one DASH MPD reader (the origin's index, the player simulator and the browser
 * harness use it, the others through `@trickle/origin/manifests`; no fastify here): a static MPD
 * into the per-representation list of init and media segments. Every way VOD packagers address
 * segments: SegmentTemplate (inherited MPD/Period -> AdaptationSet -> Representation) with
 * `$Number$` or `$Time$` and a SegmentTimeline (repeats, gaps, non-zero and negative starts,
 * presentationTimeOffset) or a duration; SegmentList with `media` files or `mediaRange` byte ranges
 * of one file; SegmentBase (the on-demand profile: one file whose own `sidx` lists its segments,
 * read by the index); several Periods; BaseURL at every level. ISO 8601 durations and template
 * filling are the CTA common media library's.
 *
 * A construct the index cannot use although it is valid DASH is named as unsupported (a dynamic
 * MPD; a representation whose files live elsewhere) rather than called corrupt.
 */
import { decodeIso8601Duration } from '@svta/common-media-library/iso8601';
import { processUriTemplate } from '@svta/common-media-library/dash';
import { XMLParser } from 'fast-xml-parser';
import { OriginError } from '../errors.js';
import type { ByteSpan, ManifestRendition, ManifestSegment } from './manifest.js';

export type { ByteSpan, ManifestRendition, ManifestSegment } from './manifest.js';

type XmlNode = Record<string, unknown>;

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  isArray: (name) =>
    [
      'Period',
      'AdaptationSet',
      'Representation',
      'S',
      'SegmentURL',
      'BaseURL',
      'EssentialProperty',
      'SupplementalProperty',
      'Role',
    ].includes(name),
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
  if (typeof value === 'string') return { '#text': value };
  return value as XmlNode | undefined;
}

function children(node: XmlNode | undefined, name: string): XmlNode[] {
  const value = node?.[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).map((item) =>
    typeof item === 'object' && item !== null ? (item as XmlNode) : { '#text': String(item) },
  );
}

function text(node: XmlNode): string {
  return String(node['#text'] ?? '').trim();
}

/** `first-last` (inclusive, as DASH writes byte ranges) as a span. */
function byteRange(value: string | undefined, source: string, what: string): ByteSpan | undefined {
  if (value === undefined) return undefined;
  const match = /^\s*(\d+)-(\d+)\s*$/.exec(value);
  if (match === null || Number(match[2]) < Number(match[1]))
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: ${what} "${value}" is not a byte range first-last`, {
      file: source,
    });
  return { offset: Number(match[1]), sizeBytes: Number(match[2]) - Number(match[1]) + 1 };
}

/**
 * One addressing element (SegmentTemplate, SegmentList or SegmentBase) after inheritance: the inner level's attributes
 * and children win.
 */
function merged(levels: readonly XmlNode[], name: string): XmlNode | undefined {
  const found = levels.map((level) => child(level, name)).filter((node) => node !== undefined);
  return found.length === 0 ? undefined : Object.assign({}, ...found);
}

export interface MpdPeriod {
  readonly index: number;
  readonly id: string | undefined;
  readonly startSec: number;
  readonly durationSec: number | undefined;
}

export interface ParsedMpd {
  readonly renditions: ManifestRendition[];
  /** The presentation's duration (MPD@mediaPresentationDuration, else the Periods' sum), when stated. */
  readonly durationSec: number | undefined;
  readonly periods: readonly MpdPeriod[];
  /** DASH profiles the MPD declares (on-demand, live, CMAF, ...). */
  readonly profiles: readonly string[];
}

/**
 * Parses an MPD. `source` names it in errors; `manifest` is its path relative to the asset
 * directory (renditions record it, and files are resolved relative to its folder).
 */
export function parseMpd(text: string, source: string, manifest = source): ParsedMpd {
  let document: XmlNode;
  try {
    document = parser.parse(text, true) as XmlNode;
  } catch (error) {
    throw new OriginError(
      'ORIGIN_ERR_CORRUPT_MEDIA',
      `${source}: MPD is not well-formed XML: ${(error as Error).message}`,
      { file: source },
      { cause: error },
    );
  }
  const mpd = child(document, 'MPD');
  if (mpd === undefined)
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: no MPD element`, { file: source });
  if (attr(mpd, 'type') === 'dynamic') {
    throw new OriginError(
      'ORIGIN_ERR_UNSUPPORTED_MEDIA',
      `${source}: a dynamic (live) MPD; the origin indexes VOD (type="static"): serve a finished presentation`,
      { file: source },
    );
  }
  const iso = (value: string | undefined): number | undefined => {
    if (value === undefined) return undefined;
    try {
      return parseIsoDurationSec(value);
    } catch (error) {
      throw new OriginError(
        'ORIGIN_ERR_CORRUPT_MEDIA',
        `${source}: ${(error as Error).message}`,
        { file: source },
        { cause: error },
      );
    }
  };
  const periodNodes = children(mpd, 'Period');
  if (periodNodes.length === 0)
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: no Period`, { file: source });
  const presentationSec = iso(attr(mpd, 'mediaPresentationDuration'));

  // Period starts: @start, else the previous Period's end (ISO/IEC 23009-1 5.3.2.1).
  const periods: MpdPeriod[] = [];
  let previousEndSec: number | undefined = 0;
  periodNodes.forEach((node, index) => {
    if (attr(node, 'xlink:href') !== undefined) {
      throw new OriginError(
        'ORIGIN_ERR_UNSUPPORTED_MEDIA',
        `${source}: Period ${index} is remote (xlink:href); resolve remote Periods into the MPD before serving it`,
        { file: source },
      );
    }
    const startSec = iso(attr(node, 'start')) ?? previousEndSec;
    if (startSec === undefined)
      throw new OriginError(
        'ORIGIN_ERR_CORRUPT_MEDIA',
        `${source}: Period ${index} has no start and the one before it no duration`,
        { file: source },
      );
    const stated = iso(attr(node, 'duration'));
    periods.push({ index, id: attr(node, 'id'), startSec, durationSec: stated });
    previousEndSec = stated === undefined ? undefined : startSec + stated;
  });
  // A Period without a duration lasts until the next one starts, or the presentation ends.
  const resolvedPeriods = periods.map((period, i) => {
    const nextStart = periods[i + 1]?.startSec;
    const durationSec =
      period.durationSec ??
      (nextStart !== undefined
        ? nextStart - period.startSec
        : presentationSec !== undefined
          ? presentationSec - period.startSec
          : undefined);
    return { ...period, durationSec };
  });
  const lastPeriod = resolvedPeriods[resolvedPeriods.length - 1]!;
  const durationSec =
    presentationSec ??
    (lastPeriod.durationSec === undefined ? undefined : lastPeriod.startSec + lastPeriod.durationSec);

  const renditions: ManifestRendition[] = [];
  const multiPeriod = periodNodes.length > 1;
  periodNodes.forEach((periodNode, periodIndex) => {
    const period = resolvedPeriods[periodIndex]!;
    for (const adaptation of children(periodNode, 'AdaptationSet')) {
      for (const representation of children(adaptation, 'Representation')) {
        const representationId = attr(representation, 'id');
        if (representationId === undefined)
          throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: Representation without id`, { file: source });
        const levels = [mpd, periodNode, adaptation, representation] as const;
        renditions.push(
          readRepresentation(
            levels,
            representationId,
            multiPeriod ? `${period.id ?? periodIndex}/${representationId}` : representationId,
            period,
            source,
            manifest,
          ),
        );
      }
    }
  });
  return {
    renditions,
    durationSec,
    periods: resolvedPeriods,
    profiles: (attr(mpd, 'profiles') ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
  };
}

type Levels = readonly [mpd: XmlNode, period: XmlNode, adaptation: XmlNode, representation: XmlNode];

function kindOf(
  adaptation: XmlNode,
  representation: XmlNode,
): { kind: ManifestRendition['kind']; container: ManifestRendition['container'] } {
  const mimeType = attr(representation, 'mimeType') ?? attr(adaptation, 'mimeType') ?? '';
  const contentType =
    attr(adaptation, 'contentType') ?? attr(representation, 'contentType') ?? mimeType.split('/')[0] ?? '';
  const codecs = attr(representation, 'codecs') ?? attr(adaptation, 'codecs') ?? '';
  if (contentType === 'text' || mimeType.startsWith('text/') || /^(stpp|wvtt)/.test(codecs))
    return { kind: 'other', container: mimeType === 'application/mp4' ? 'fmp4' : 'text' };
  const container = mimeType === 'video/mp2t' ? 'ts' : 'fmp4';
  if (contentType === 'video') return { kind: 'video', container };
  if (contentType === 'audio') return { kind: 'audio', container };
  return { kind: 'other', container };
}

function isTrickPlay(adaptation: XmlNode, representation: XmlNode): boolean {
  const properties = [...children(adaptation, 'EssentialProperty'), ...children(representation, 'EssentialProperty')];
  return properties.some((p) => attr(p, 'schemeIdUri') === 'http://dashif.org/guidelines/trickmode');
}

function readRepresentation(
  levels: Levels,
  representationId: string,
  id: string,
  period: MpdPeriod,
  source: string,
  manifest: string,
): ManifestRendition {
  const [, , adaptation, representation] = levels;
  const { kind, container } = kindOf(adaptation, representation);
  const bandwidth = numberAttr(representation, 'bandwidth');
  const base = {
    id,
    kind,
    container,
    declaredBandwidthBps: bandwidth,
    width: numberAttr(representation, 'width') ?? numberAttr(adaptation, 'width'),
    height: numberAttr(representation, 'height') ?? numberAttr(adaptation, 'height'),
    codecs: attr(representation, 'codecs') ?? attr(adaptation, 'codecs'),
    trickPlay: isTrickPlay(adaptation, representation) || undefined,
    period: { index: period.index, startSec: period.startSec },
    manifest,
  } as const;
  const files = new BaseUrls(levels, manifest, source);
  if (files.absolute !== undefined) {
    return {
      ...base,
      initFile: undefined,
      segments: [],
      unsupported:
        `its BaseURL "${files.absolute}" is absolute: its files are not this asset's (the ` +
        `origin serves the files beside the manifest)`,
    };
  }
  return { ...base, ...addressing(levels, representationId, bandwidth, period, files, source) };
}

/**
 * The BaseURLs of an element's levels (MPD, Period, AdaptationSet, Representation), each resolved
 * against the one above, as paths relative to the asset directory.
 */
class BaseUrls {
  /** The first absolute BaseURL, when one leaves the asset. */
  readonly absolute: string | undefined;
  private readonly base: URL;
  /** The innermost level names a file (not a folder): the Representation's one file. */
  readonly file: string | undefined;

  constructor(levels: readonly XmlNode[], manifest: string, source: string) {
    const root = new URL('http://asset.invalid/');
    let base = new URL(manifest, root);
    let absolute: string | undefined;
    let named: XmlNode | undefined;
    for (const level of levels) {
      const node = children(level, 'BaseURL')[0];
      if (node === undefined) continue;
      const value = text(node);
      named = node;
      try {
        base = new URL(value, base);
      } catch (error) {
        throw new OriginError(
          'ORIGIN_ERR_CORRUPT_MEDIA',
          `${source}: BaseURL "${value}" is not a URL`,
          { file: source },
          { cause: error },
        );
      }
      if (base.origin !== root.origin) absolute ??= value;
    }
    this.absolute = absolute;
    this.base = base;
    this.file = named !== undefined && !base.pathname.endsWith('/') ? this.path(base) : undefined;
  }

  private path(url: URL): string {
    return decodeURIComponent(url.pathname.slice(1));
  }

  resolve(file: string): string {
    return this.path(new URL(file, this.base));
  }
}

function addressing(
  levels: Levels,
  representationId: string,
  bandwidth: number | undefined,
  period: MpdPeriod,
  files: BaseUrls,
  source: string,
): Pick<ManifestRendition, 'initFile' | 'initRange' | 'segments' | 'segmentBase' | 'unsupported' | 'timeTemplate'> {
  const [, periodNode, adaptation, representation] = levels;
  const addressingLevels = [periodNode, adaptation, representation];
  const fill = (template: string, number: number | null, time: number | null) =>
    processUriTemplate(template, representationId, number, null, bandwidth ?? 0, time);

  const template = merged(addressingLevels, 'SegmentTemplate');
  if (template !== undefined) {
    const media = attr(template, 'media');
    if (media === undefined)
      throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: SegmentTemplate without media`, { file: source });
    if (media.includes('$SubNumber$'))
      return {
        initFile: undefined,
        segments: [],
        unsupported: 'its SegmentTemplate addresses $SubNumber$ (low-latency parts); index whole segments',
      };
    const initialization = attr(template, 'initialization');
    const slots = timeSlots(template, period, source);
    const timeMarker = 987654321987;
    return {
      initFile: initialization === undefined ? undefined : files.resolve(fill(initialization, null, null)),
      segments: slots.map((slot) => ({
        file: files.resolve(fill(media, slot.number, slot.time)),
        number: slot.number,
        manifestStartSec: slot.startSec,
        manifestDurationSec: slot.durationSec,
      })),
      timeTemplate: media.includes('$Time')
        ? {
            pattern: files.resolve(fill(media, null, timeMarker)).replace(String(timeMarker), '{time}'),
            timescale: numberAttr(template, 'timescale') ?? 1,
          }
        : undefined,
    };
  }

  const list = merged(addressingLevels, 'SegmentList');
  if (list !== undefined) {
    const initialization = child(list, 'Initialization');
    const urls = children(list, 'SegmentURL');
    const slots = timeSlots(list, period, source, urls.length);
    const segments: ManifestSegment[] = urls.map((url, k) => {
      const media = attr(url, 'media');
      const range = byteRange(attr(url, 'mediaRange'), source, 'SegmentURL@mediaRange');
      const file = media !== undefined ? files.resolve(media) : files.file;
      if (file === undefined)
        throw new OriginError(
          'ORIGIN_ERR_CORRUPT_MEDIA',
          `${source}: Representation ${representationId}: SegmentURL ${k + 1} has neither ` +
            `media nor a BaseURL naming its file`,
          { file: source },
        );
      const slot = slots[k]!;
      return {
        file,
        range,
        number: slot.number,
        manifestStartSec: slot.startSec,
        manifestDurationSec: slot.durationSec,
      };
    });
    return { ...initializationOf(initialization, files, source), segments };
  }

  const segmentBase = merged(addressingLevels, 'SegmentBase');
  if (files.file !== undefined) {
    // SegmentBase, or a BaseURL alone: one file whose own sidx lists its segments.
    return {
      ...initializationOf(child(segmentBase, 'Initialization'), files, source),
      segments: [],
      segmentBase: {
        file: files.file,
        indexRange: byteRange(attr(segmentBase, 'indexRange'), source, 'SegmentBase@indexRange'),
      },
    };
  }
  throw new OriginError(
    'ORIGIN_ERR_CORRUPT_MEDIA',
    segmentBase !== undefined
      ? `${source}: Representation ${representationId} uses SegmentBase but no BaseURL names its file`
      : `${source}: Representation ${representationId} has no SegmentTemplate, SegmentList, ` +
          `SegmentBase or BaseURL: nothing addresses its media`,
    { file: source },
  );
}

function initializationOf(
  node: XmlNode | undefined,
  files: BaseUrls,
  source: string,
): Pick<ManifestRendition, 'initFile' | 'initRange'> {
  if (node === undefined) return { initFile: undefined, initRange: undefined };
  const sourceUrl = attr(node, 'sourceURL');
  const range = byteRange(attr(node, 'range'), source, 'Initialization@range');
  return {
    initFile: sourceUrl !== undefined ? files.resolve(sourceUrl) : range !== undefined ? files.file : undefined,
    initRange: range,
  };
}

interface TimeSlot {
  readonly number: number;
  /** In the element's timescale: what `$Time$` names. */
  readonly time: number;
  readonly startSec: number;
  readonly durationSec: number;
}

/**
 * The segments' times of a SegmentTemplate or SegmentList: from its SegmentTimeline (repeats,
 * negative repeats up to the next S or the Period's end, explicit `t` with gaps), or from its
 * duration (`count` slots for a list; up to the Period's end for a template). Times in the
 * presentation subtract presentationTimeOffset and add the Period's start.
 */
function timeSlots(element: XmlNode, period: MpdPeriod, source: string, count?: number): TimeSlot[] {
  const timescale = numberAttr(element, 'timescale') ?? 1;
  const startNumber = numberAttr(element, 'startNumber') ?? 1;
  const offsetTicks = numberAttr(element, 'presentationTimeOffset') ?? 0;
  const toSec = (ticks: number) => period.startSec + (ticks - offsetTicks) / timescale;
  const slots: TimeSlot[] = [];
  const timeline = child(element, 'SegmentTimeline');
  if (timeline !== undefined) {
    let time = offsetTicks;
    let number = startNumber;
    const entries = children(timeline, 'S');
    entries.forEach((entry, index) => {
      const d = numberAttr(entry, 'd');
      if (d === undefined || d <= 0)
        throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: SegmentTimeline S without a positive d`, {
          file: source,
        });
      time = numberAttr(entry, 't') ?? time;
      let repeat = numberAttr(entry, 'r') ?? 0;
      if (repeat < 0) {
        const nextStart = numberAttr(entries[index + 1], 't');
        const endTicks =
          nextStart ?? (period.durationSec === undefined ? time + d : offsetTicks + period.durationSec * timescale);
        repeat = Math.max(0, Math.ceil((endTicks - time) / d - 1e-9) - 1);
      }
      for (let k = 0; k <= repeat; k++) {
        slots.push({ number, time, startSec: toSec(time), durationSec: d / timescale });
        time += d;
        number++;
      }
    });
    return count === undefined ? slots : slots.slice(0, count);
  }
  const duration = numberAttr(element, 'duration');
  if (count !== undefined) {
    // A SegmentList may omit its duration: the index measures every segment anyway.
    const step = duration ?? 0;
    for (let k = 0; k < count; k++)
      slots.push({
        number: startNumber + k,
        time: offsetTicks + k * step,
        startSec: toSec(offsetTicks + k * step),
        durationSec: step / timescale,
      });
    return slots;
  }
  if (duration === undefined || duration <= 0 || period.durationSec === undefined) {
    throw new OriginError(
      'ORIGIN_ERR_CORRUPT_MEDIA',
      `${source}: SegmentTemplate needs a SegmentTimeline, or a duration and a known Period length`,
      { file: source },
    );
  }
  const total = Math.ceil((period.durationSec * timescale) / duration - 1e-9);
  for (let k = 0; k < total; k++) {
    const ticks = offsetTicks + k * duration;
    slots.push({
      number: startNumber + k,
      time: ticks,
      startSec: toSec(ticks),
      durationSec: Math.min(duration / timescale, period.durationSec - (k * duration) / timescale),
    });
  }
  return slots;
}
