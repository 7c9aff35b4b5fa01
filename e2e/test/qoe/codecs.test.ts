/**
 * The fixture's codec check: the codecs an MPD or an HLS master declares, and the one-line error a
 * browser that cannot decode them gives (asked in real Chromium: Debian's decodes H.264 and AAC,
 * not HEVC, so an HEVC-only stream stands in for an H.264 one in Playwright's own Chromium).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { launchChromium, type LaunchedChromium } from '../../src/chromium.js';
import { E2eError } from '../../src/errors.js';
import { assertDecodable, declaredCodecs } from '../../src/qoe/codecs.js';
import { skipUnless } from '../helpers/requirements.js';

const mpd = (videoCodecs: string) => `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S"><Period>
  <AdaptationSet contentType="video"><SegmentTemplate timescale="1" duration="2" media="v$Number$.m4s" initialization="v.mp4"/>
    <Representation id="v" bandwidth="1000000" codecs="${videoCodecs}"/></AdaptationSet>
  <AdaptationSet contentType="audio"><SegmentTemplate timescale="1" duration="2" media="a$Number$.m4s" initialization="a.mp4"/>
    <Representation id="a" bandwidth="128000" codecs="mp4a.40.2"/></AdaptationSet>
</Period></MPD>`;

describe('declared codecs', () => {
  it('reads them from an MPD and from an HLS master playlist; a progressive MP4 declares none', () => {
    assert.deepEqual(declaredCodecs('http://o/media/demo/manifest.mpd', mpd('avc1.64001f')), [
      { kind: 'video', type: 'video/mp4; codecs="avc1.64001f"' },
      { kind: 'audio', type: 'audio/mp4; codecs="mp4a.40.2"' },
    ]);
    const master =
      '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=900000,CODECS="avc1.4d401f,mp4a.40.2"\nlow.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=3000000,CODECS="avc1.640028,mp4a.40.2"\nhigh.m3u8\n';
    assert.deepEqual(
      declaredCodecs('http://o/master.m3u8', master).map((c) => c.type),
      ['video/mp4; codecs="avc1.4d401f"', 'audio/mp4; codecs="mp4a.40.2"', 'video/mp4; codecs="avc1.640028"'],
    );
    assert.deepEqual(declaredCodecs('http://o/progressive.mp4', ''), []);
  });
});

const skip = skipUnless('the codec check in Chromium', { chromium: true });

describe('the codec check in Chromium', { skip }, () => {
  let chromium: LaunchedChromium;
  before(async () => {
    chromium = await launchChromium();
  });
  after(async () => {
    await chromium?.close();
  });

  it('passes a stream the browser decodes, and names the fix for one it cannot', async () => {
    const page = await chromium.context.newPage();
    const url = 'http://o/media/x/manifest.mpd';
    await assertDecodable(page, url, declaredCodecs(url, mpd('avc1.64001f')), "Debian's Chromium");
    await assert.rejects(
      assertDecodable(page, url, declaredCodecs(url, mpd('hvc1.1.6.L93.B0')), "Debian's Chromium"),
      (error: unknown) =>
        error instanceof E2eError &&
        error.code === 'E2E_ERR_CODECS' &&
        /cannot decode the video of .*manifest\.mpd \(hvc1\.1\.6\.L93\.B0: MediaSource\.isTypeSupported is false\).*channel: 'chrome'/.test(
          (error as Error).message,
        ),
    );
    await page.close();
  });
});
