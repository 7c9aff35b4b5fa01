import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isOriginError } from '../../src/errors.js';
import { fillTemplate, parseIsoDurationSec, parseMpd } from '../../src/media/mpd.js';

const mpd = (body: string, duration = 'PT10S') => `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="${duration}">
  <Period id="0">${body}</Period>
</MPD>`;

describe('MPD reading', () => {
  it('parses ISO 8601 durations', () => {
    assert.equal(parseIsoDurationSec('PT30.0S'), 30);
    assert.equal(parseIsoDurationSec('PT1H2M3.5S'), 3723.5);
    assert.equal(parseIsoDurationSec('P1DT1S'), 86401);
    assert.throws(() => parseIsoDurationSec('30s'));
    assert.throws(() => parseIsoDurationSec('PT'));
  });

  it('fills templates with widths and escapes', () => {
    assert.equal(fillTemplate('chunk-$RepresentationID$-$Number%05d$.m4s', { representationId: 'v1', number: 7 }), 'chunk-v1-00007.m4s');
    assert.equal(fillTemplate('t$Time$-$Bandwidth$$$.m4s', { representationId: 'a', time: 9000, bandwidth: 128000 }), 't9000-128000$.m4s');
  });

  it('expands SegmentTimeline repeats with inherited templates', () => {
    const { renditions, durationSec } = parseMpd(
      mpd(`<AdaptationSet contentType="video">
        <SegmentTemplate timescale="1000" initialization="init-$RepresentationID$.m4s" media="seg-$RepresentationID$-$Number$.m4s" startNumber="5">
          <SegmentTimeline><S t="0" d="2000" r="3"/><S d="1500"/></SegmentTimeline>
        </SegmentTemplate>
        <Representation id="hi" bandwidth="2000000" width="1280" height="720"/>
      </AdaptationSet>`),
      'test.mpd',
    );
    assert.equal(durationSec, 10);
    assert.equal(renditions.length, 1);
    const [video] = renditions;
    assert.equal(video!.initFile, 'init-hi.m4s');
    assert.deepEqual(video!.segments.map((s) => s.file), ['seg-hi-5.m4s', 'seg-hi-6.m4s', 'seg-hi-7.m4s', 'seg-hi-8.m4s', 'seg-hi-9.m4s']);
    assert.deepEqual(video!.segments.map((s) => s.manifestStartSec), [0, 2, 4, 6, 8]);
    assert.equal(video!.segments[4]!.manifestDurationSec, 1.5);
    assert.equal(video!.height, 720);
  });

  it('expands duration-based templates and negative repeats to the period end', () => {
    const byDuration = parseMpd(
      mpd(`<AdaptationSet mimeType="audio/mp4"><Representation id="a"><SegmentTemplate timescale="10" duration="40" media="a$Number$.m4s" initialization="a.init"/></Representation></AdaptationSet>`),
      't',
    );
    assert.equal(byDuration.renditions[0]!.kind, 'audio');
    assert.deepEqual(byDuration.renditions[0]!.segments.map((s) => s.manifestDurationSec), [4, 4, 2]);
    const negative = parseMpd(
      mpd(`<AdaptationSet contentType="video"><Representation id="v"><SegmentTemplate timescale="1" media="v$Number$.m4s" initialization="v.init"><SegmentTimeline><S t="0" d="2" r="-1"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet>`),
      't',
    );
    assert.equal(negative.renditions[0]!.segments.length, 5);
  });

  it('names the file and the problem for malformed or unsupported MPDs', () => {
    const corrupt = (error: unknown) => isOriginError(error, 'ORIGIN_ERR_CORRUPT_MEDIA') && (error as Error).message.startsWith('bad.mpd');
    assert.throws(() => parseMpd('<MPD><Period>', 'bad.mpd'), corrupt);
    assert.throws(() => parseMpd('<nothing/>', 'bad.mpd'), corrupt);
    assert.throws(() => parseMpd(mpd('<AdaptationSet><Representation id="x"><SegmentBase/></Representation></AdaptationSet>'), 'bad.mpd'), corrupt);
    assert.throws(() => parseMpd('<MPD mediaPresentationDuration="PT1S"><Period/><Period/></MPD>', 'bad.mpd'), corrupt);
  });
});
