import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isOriginError } from '../../src/errors.js';
import { parseIsoDurationSec, parseMpd } from '../../src/media/mpd.js';

const mpd = (body: string, duration = 'PT10S') => `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="${duration}">
  <Period id="0">${body}</Period>
</MPD>`;

describe('MPD reading', () => {
  it('parses ISO 8601 durations, in every form packagers write them', () => {
    assert.equal(parseIsoDurationSec('PT30.0S'), 30);
    assert.equal(parseIsoDurationSec('PT1H2M3.5S'), 3723.5);
    assert.equal(parseIsoDurationSec('P1DT1S'), 86401);
    assert.equal(parseIsoDurationSec('P0Y0M0DT0H2M0S'), 120);
    assert.equal(parseIsoDurationSec('PT0H0M10.000S'), 10);
    assert.throws(() => parseIsoDurationSec('30s'));
    assert.throws(() => parseIsoDurationSec('PT-5S'));
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
    assert.deepEqual(
      video!.segments.map((s) => s.file),
      ['seg-hi-5.m4s', 'seg-hi-6.m4s', 'seg-hi-7.m4s', 'seg-hi-8.m4s', 'seg-hi-9.m4s'],
    );
    assert.deepEqual(
      video!.segments.map((s) => s.manifestStartSec),
      [0, 2, 4, 6, 8],
    );
    assert.equal(video!.segments[4]!.manifestDurationSec, 1.5);
    assert.equal(video!.height, 720);
  });

  it('expands duration-based templates and negative repeats to the period end', () => {
    const byDuration = parseMpd(
      mpd(
        `<AdaptationSet mimeType="audio/mp4"><Representation id="a"><SegmentTemplate ` +
          `timescale="10" duration="40" media="a$Number$.m4s" ` +
          `initialization="a.init"/></Representation></AdaptationSet>`,
      ),
      't',
    );
    assert.equal(byDuration.renditions[0]!.kind, 'audio');
    assert.deepEqual(
      byDuration.renditions[0]!.segments.map((s) => s.manifestDurationSec),
      [4, 4, 2],
    );
    const negative = parseMpd(
      mpd(
        `<AdaptationSet contentType="video"><Representation id="v"><SegmentTemplate ` +
          `timescale="1" media="v$Number$.m4s" initialization="v.init"><SegmentTimeline><S ` +
          `t="0" d="2" r="-1"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet>`,
      ),
      't',
    );
    assert.equal(negative.renditions[0]!.segments.length, 5);
  });

  it('names the file and the problem for malformed or unsupported MPDs', () => {
    const corrupt = (error: unknown) =>
      isOriginError(error, 'ORIGIN_ERR_CORRUPT_MEDIA') && (error as Error).message.startsWith('bad.mpd');
    assert.throws(() => parseMpd('<MPD><Period>', 'bad.mpd'), corrupt);
    assert.throws(() => parseMpd('<nothing/>', 'bad.mpd'), corrupt);
    assert.throws(
      () =>
        parseMpd(
          mpd('<AdaptationSet><Representation id="x"><SegmentBase/></Representation></AdaptationSet>'),
          'bad.mpd',
        ),
      corrupt,
    );
    assert.throws(
      () =>
        parseMpd(
          mpd(
            '<AdaptationSet><Representation id="x"><SegmentList><SegmentURL ' +
              'mediaRange="9-1"/></SegmentList></Representation></AdaptationSet>',
          ),
          'bad.mpd',
        ),
      corrupt,
    );
    const unsupported = (error: unknown) =>
      isOriginError(error, 'ORIGIN_ERR_UNSUPPORTED_MEDIA') && /dynamic \(live\) MPD/.test((error as Error).message);
    assert.throws(
      () => parseMpd('<MPD type="dynamic" availabilityStartTime="2026-01-01T00:00:00Z"><Period/></MPD>', 'live.mpd'),
      unsupported,
    );
  });
  // MPDs in the shapes the common packagers write (written by hand after their output).
  it('reads ffmpeg dashenc output: per-Representation templates, $Number%05d$, timelines, audio beside video', () => {
    const { renditions, durationSec } = parseMpd(
      `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:xlink="http://www.w3.org/1999/xlink" profiles="urn:mpeg:dash:profile:isoff-live:2011" type="static" mediaPresentationDuration="PT10.0S" maxSegmentDuration="PT4.0S" minBufferTime="PT8.0S">
	<ProgramInformation>
	</ProgramInformation>
	<ServiceDescription id="0">
	</ServiceDescription>
	<Period id="0" start="PT0.0S">
		<AdaptationSet id="0" contentType="video" startWithSAP="1" segmentAlignment="true" bitstreamSwitching="true" frameRate="25/1" maxWidth="1280" maxHeight="720" par="16:9" lang="und">
			<Representation id="0" mimeType="video/mp4" codecs="avc1.64001f" bandwidth="2000000" width="1280" height="720" sar="1:1">
				<SegmentTemplate timescale="12800" initialization="init-stream$RepresentationID$.m4s" media="chunk-stream$RepresentationID$-$Number%05d$.m4s" startNumber="1">
					<SegmentTimeline>
						<S t="0" d="51200" r="1" />
						<S d="25600" />
					</SegmentTimeline>
				</SegmentTemplate>
			</Representation>
		</AdaptationSet>
		<AdaptationSet id="1" contentType="audio" startWithSAP="1" segmentAlignment="true" bitstreamSwitching="true" lang="und">
			<Representation id="1" mimeType="audio/mp4" codecs="mp4a.40.2" bandwidth="128000" audioSamplingRate="48000">
				<AudioChannelConfiguration schemeIdUri="urn:mpeg:dash:23003:3:audio_channel_configuration:2011" value="2" />
				<SegmentTemplate timescale="48000" initialization="init-stream$RepresentationID$.m4s" media="chunk-stream$RepresentationID$-$Number%05d$.m4s" startNumber="1">
					<SegmentTimeline>
						<S t="0" d="192000" r="1" />
						<S d="96000" />
					</SegmentTimeline>
				</SegmentTemplate>
			</Representation>
		</AdaptationSet>
	</Period>
</MPD>`,
      'ffmpeg.mpd',
    );
    assert.equal(durationSec, 10);
    assert.deepEqual(
      renditions.map((r) => [r.id, r.kind, r.declaredBandwidthBps, r.codecs, r.initFile]),
      [
        ['0', 'video', 2_000_000, 'avc1.64001f', 'init-stream0.m4s'],
        ['1', 'audio', 128_000, 'mp4a.40.2', 'init-stream1.m4s'],
      ],
    );
    assert.deepEqual(
      renditions[0]!.segments.map((s) => [s.file, s.manifestStartSec, s.manifestDurationSec]),
      [
        ['chunk-stream0-00001.m4s', 0, 4],
        ['chunk-stream0-00002.m4s', 4, 4],
        ['chunk-stream0-00003.m4s', 8, 2],
      ],
    );
  });

  it('reads Shaka Packager output: $Time$ addressing with explicit t, media in per-stream folders', () => {
    const { renditions, durationSec } = parseMpd(
      `<?xml version="1.0" encoding="UTF-8"?>
<!--Generated with https://github.com/shaka-project/shaka-packager version v3.2.0-->
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:cenc="urn:mpeg:cenc:2013" profiles="urn:mpeg:dash:profile:isoff-live:2011" minBufferTime="PT2S" type="static" mediaPresentationDuration="PT9.009S">
  <Period id="0">
    <AdaptationSet id="0" contentType="video" maxWidth="1920" maxHeight="1080" frameRate="30000/1001" segmentAlignment="true" par="16:9">
      <Representation id="0" bandwidth="1200000" codecs="avc1.64001f" mimeType="video/mp4" sar="1:1" width="960" height="540">
        <SegmentTemplate timescale="30000" initialization="h264_540p/init.mp4" media="h264_540p/$Time$.m4s" startNumber="1">
          <SegmentTimeline>
            <S t="0" d="180180"/>
            <S t="180180" d="90090"/>
          </SegmentTimeline>
        </SegmentTemplate>
      </Representation>
      <Representation id="1" bandwidth="4500000" codecs="avc1.640028" mimeType="video/mp4" sar="1:1" width="1920" height="1080">
        <SegmentTemplate timescale="30000" initialization="h264_1080p/init.mp4" media="h264_1080p/$Time$.m4s" startNumber="1">
          <SegmentTimeline>
            <S t="0" d="180180"/>
            <S t="180180" d="90090"/>
          </SegmentTimeline>
        </SegmentTemplate>
      </Representation>
    </AdaptationSet>
  </Period>
</MPD>`,
      'shaka.mpd',
    );
    assert.equal(durationSec, 9.009);
    assert.deepEqual(
      renditions.map((r) => [r.height, r.initFile]),
      [
        [540, 'h264_540p/init.mp4'],
        [1080, 'h264_1080p/init.mp4'],
      ],
    );
    assert.deepEqual(
      renditions[1]!.segments.map((s) => [s.file, s.manifestDurationSec]),
      [
        ['h264_1080p/0.m4s', 6.006],
        ['h264_1080p/180180.m4s', 3.003],
      ],
    );
  });

  it(
    'reads GPAC (MP4Box -profile live) output: one AdaptationSet template by duration ' + 'for every Representation',
    () => {
      const { renditions } = parseMpd(
        `<?xml version="1.0"?>
<!-- MPD file Generated with GPAC version 2.2.1 -->
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" minBufferTime="PT1.500S" type="static" mediaPresentationDuration="PT0H0M5.000S" maxSegmentDuration="PT0H0M2.000S" profiles="urn:mpeg:dash:profile:isoff-live:2011">
 <ProgramInformation moreInformationURL="https://gpac.io">
  <Title>clip_dash.mpd generated by GPAC</Title>
 </ProgramInformation>
 <Period duration="PT0H0M5.000S">
  <AdaptationSet segmentAlignment="true" maxWidth="1280" maxHeight="720" maxFrameRate="25" par="16:9" lang="und" startWithSAP="1">
   <SegmentTemplate media="clip_$RepresentationID$_$Number$.m4s" initialization="clip_$RepresentationID$_.mp4" timescale="12800" startNumber="1" duration="25600"/>
   <Representation id="1" mimeType="video/mp4" codecs="avc1.64001F" width="640" height="360" frameRate="25" sar="1:1" bandwidth="800000">
   </Representation>
   <Representation id="2" mimeType="video/mp4" codecs="avc1.64001F" width="1280" height="720" frameRate="25" sar="1:1" bandwidth="2400000">
   </Representation>
  </AdaptationSet>
 </Period>
</MPD>`,
        'gpac.mpd',
      );
      assert.deepEqual(
        renditions.map((r) => [r.id, r.kind, r.width, r.initFile]),
        [
          ['1', 'video', 640, 'clip_1_.mp4'],
          ['2', 'video', 1280, 'clip_2_.mp4'],
        ],
      );
      assert.deepEqual(
        renditions[1]!.segments.map((s) => [s.file, s.number, s.manifestDurationSec]),
        [
          ['clip_2_1.m4s', 1, 2],
          ['clip_2_2.m4s', 2, 2],
          ['clip_2_3.m4s', 3, 1],
        ],
      );
    },
  );

  it('reads SegmentList under relative BaseURLs (GPAC -profile main), and names absolute ones as unsupported', () => {
    const list = (base: string) =>
      mpd(`<BaseURL>${base}</BaseURL><AdaptationSet mimeType="video/mp4"><Representation id="v" bandwidth="900000" height="480"><BaseURL>480p/</BaseURL>
        <SegmentList timescale="1000" duration="4000"><Initialization sourceURL="init.mp4"/><SegmentURL media="s1.m4s"/><SegmentURL media="s2.m4s"/></SegmentList>
      </Representation></AdaptationSet>`);
    const [video] = parseMpd(list('video/'), 'list.mpd').renditions;
    assert.equal(video!.initFile, 'video/480p/init.mp4');
    assert.deepEqual(
      video!.segments.map((s) => [s.file, s.manifestStartSec]),
      [
        ['video/480p/s1.m4s', 0],
        ['video/480p/s2.m4s', 4],
      ],
    );
    const [elsewhere] = parseMpd(list('https://cdn.example.com/video/'), 'list.mpd').renditions;
    assert.match(elsewhere!.unsupported ?? '', /BaseURL "https:\/\/cdn.example.com\/video\/" is absolute/);
    assert.deepEqual(elsewhere!.segments, []);
  });

  it("resolves files relative to the MPD's own folder", () => {
    const [video] = parseMpd(
      mpd(
        `<AdaptationSet contentType="video"><Representation id="v"><SegmentTemplate ` +
          `timescale="1" duration="5" media="v/$Number$.m4s" ` +
          `initialization="v/init.mp4"/></Representation></AdaptationSet>`,
      ),
      'x.mpd',
      'dash/manifest.mpd',
    ).renditions;
    assert.equal(video!.initFile, 'dash/v/init.mp4');
    assert.deepEqual(
      video!.segments.map((s) => s.file),
      ['dash/v/1.m4s', 'dash/v/2.m4s'],
    );
    assert.equal(video!.manifest, 'dash/manifest.mpd');
  });

  it(
    'reads SegmentBase (Shaka Packager and GPAC on-demand profiles): the file, its init ' +
      'range and where its sidx is',
    () => {
      const onDemand =
        mpd(`<AdaptationSet contentType="video"><Representation id="0" bandwidth="1200000" mimeType="video/mp4"><BaseURL>h264_540p.mp4</BaseURL>
      <SegmentBase indexRange="1043-1222" timescale="30000"><Initialization range="0-1042"/></SegmentBase></Representation></AdaptationSet>`);
      const [video] = parseMpd(onDemand, 'ondemand.mpd').renditions;
      assert.equal(video!.initFile, 'h264_540p.mp4');
      assert.deepEqual(video!.initRange, { offset: 0, sizeBytes: 1043 });
      assert.deepEqual(video!.segmentBase, { file: 'h264_540p.mp4', indexRange: { offset: 1043, sizeBytes: 180 } });
      assert.deepEqual(video!.segments, []);
      // A BaseURL alone (no addressing element) is an on-demand file too: the index finds its sidx.
      const [bare] = parseMpd(
        mpd(
          '<AdaptationSet contentType="audio"><Representation ' +
            'id="a"><BaseURL>audio.mp4</BaseURL></Representation></AdaptationSet>',
        ),
        'bare.mpd',
      ).renditions;
      assert.deepEqual(bare!.segmentBase, { file: 'audio.mp4', indexRange: undefined });
    },
  );

  it("reads ffmpeg's single-file output: SegmentList with mediaRange byte ranges of the BaseURL's file", () => {
    const [video] = parseMpd(
      mpd(`<AdaptationSet contentType="video"><Representation id="0" mimeType="video/mp4" bandwidth="794556"><BaseURL>manifest-stream0.mp4</BaseURL>
        <SegmentList timescale="1000000" duration="2000000" startNumber="1"><Initialization range="0-833" />
          <SegmentURL mediaRange="834-185506" indexRange="834-885" /><SegmentURL mediaRange="185507-398726" indexRange="185507-185558" /></SegmentList>
      </Representation></AdaptationSet>`),
      'single.mpd',
    ).renditions;
    assert.equal(video!.initFile, 'manifest-stream0.mp4');
    assert.deepEqual(video!.initRange, { offset: 0, sizeBytes: 834 });
    assert.deepEqual(
      video!.segments.map((s) => [s.file, s.range, s.number, s.manifestStartSec]),
      [
        ['manifest-stream0.mp4', { offset: 834, sizeBytes: 184673 }, 1, 0],
        ['manifest-stream0.mp4', { offset: 185507, sizeBytes: 213220 }, 2, 2],
      ],
    );
  });

  it('follows timelines through gaps, explicit and negative starts, and repeats to the next S', () => {
    const [audio] = parseMpd(
      mpd(`<AdaptationSet contentType="audio"><Representation id="a"><SegmentTemplate timescale="48000" media="a-$Time$.m4s" initialization="a.init">
        <SegmentTimeline><S t="-1024" d="96000"/><S d="96000" r="-1"/><S t="478976" d="48000"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet>`),
      't',
    ).renditions;
    assert.deepEqual(
      audio!.segments.map((s) => s.file),
      ['a--1024.m4s', 'a-94976.m4s', 'a-190976.m4s', 'a-286976.m4s', 'a-382976.m4s', 'a-478976.m4s'],
    );
    assert.equal(audio!.segments[5]!.manifestStartSec, 478976 / 48000);
    assert.equal(audio!.segments[0]!.manifestStartSec, -1024 / 48000);
  });

  it(
    'reads several Periods: each starts where it says or where the last ended, times ' + 'less presentationTimeOffset',
    () => {
      const parsed = parseMpd(
        `<MPD type="static" mediaPresentationDuration="PT8S">
        <Period id="main" duration="PT4S"><AdaptationSet contentType="video"><Representation id="0" bandwidth="1000"><SegmentTemplate timescale="1000" media="v/$Number$.m4s" initialization="v/init.mp4"><SegmentTimeline><S t="0" d="2000" r="1"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period>
        <Period id="after"><AdaptationSet contentType="video"><Representation id="0" bandwidth="1000"><SegmentTemplate timescale="1000" presentationTimeOffset="4000" startNumber="3" media="v/$Number$.m4s" initialization="v/init.mp4"><SegmentTimeline><S t="4000" d="2000" r="1"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet></Period>
      </MPD>`,
        'periods.mpd',
      );
      assert.deepEqual(
        parsed.periods.map((p) => [p.id, p.startSec, p.durationSec]),
        [
          ['main', 0, 4],
          ['after', 4, 4],
        ],
      );
      assert.deepEqual(
        parsed.renditions.map((r) => [r.id, r.period.index, r.segments.map((s) => [s.file, s.manifestStartSec])]),
        [
          [
            'main/0',
            0,
            [
              ['v/1.m4s', 0],
              ['v/2.m4s', 2],
            ],
          ],
          [
            'after/0',
            1,
            [
              ['v/3.m4s', 4],
              ['v/4.m4s', 6],
            ],
          ],
        ],
      );
    },
  );

  it('tells subtitles, trick play and MPEG-TS apart from the renditions it paces', () => {
    const { renditions } = parseMpd(
      mpd(`<AdaptationSet contentType="text" mimeType="text/vtt"><Representation id="t"><SegmentTemplate timescale="1000" duration="2000" media="t/$Number$.vtt"/></Representation></AdaptationSet>
        <AdaptationSet contentType="video" mimeType="video/mp4"><EssentialProperty schemeIdUri="http://dashif.org/guidelines/trickmode" value="1"/><Representation id="trick"><SegmentTemplate timescale="1" duration="5" media="k$Number$.m4s" initialization="k.init"/></Representation></AdaptationSet>
        <AdaptationSet contentType="video" mimeType="video/mp2t"><Representation id="ts"><SegmentTemplate timescale="1" duration="5" media="s$Number$.ts"/></Representation></AdaptationSet>`),
      'kinds.mpd',
    );
    assert.deepEqual(
      renditions.map((r) => [r.id, r.kind, r.container, r.trickPlay === true]),
      [
        ['t', 'other', 'text', false],
        ['trick', 'video', 'fmp4', true],
        ['ts', 'video', 'ts', false],
      ],
    );
  });
});
