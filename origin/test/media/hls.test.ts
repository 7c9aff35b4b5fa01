import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isOriginError } from '../../src/errors.js';
import {
  assetPath,
  isMasterPlaylist,
  loneMediaPlaylistRef,
  parseMasterPlaylist,
  parseMediaPlaylist,
} from '../../src/media/hls.js';

// Playlists in the shapes packagers write (written by hand after Shaka Packager's and ffmpeg's output).
const master = `#EXTM3U
#EXT-X-INDEPENDENT-SEGMENTS
#EXT-X-MEDIA:TYPE=AUDIO,URI="audio/en.m3u8",GROUP-ID="audio",NAME="English",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2"
#EXT-X-MEDIA:TYPE=SUBTITLES,URI="subs.m3u8",GROUP-ID="text",LANGUAGE="en",NAME="English",DEFAULT=NO,AUTOSELECT=YES
#EXT-X-STREAM-INF:BANDWIDTH=1039353,AVERAGE-BANDWIDTH=977967,CODECS="avc1.64001e,mp4a.40.2",RESOLUTION=640x360,AUDIO="audio",SUBTITLES="text"
v0.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=2039353,AVERAGE-BANDWIDTH=1877967,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=960x540,AUDIO="audio",SUBTITLES="text"
v1.m3u8
#EXT-X-STREAM-INF:BANDWIDTH=130000,CODECS="mp4a.40.2",AUDIO="audio"
audio/en.m3u8
#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=46624,CODECS="avc1.64001e",RESOLUTION=640x360,URI="v0_iframe.m3u8"
`;

describe('HLS playlist reading', () => {
  it('lists every media playlist of a master once: variants, alternate audio, subtitles, I-frame playlists', () => {
    assert.ok(isMasterPlaylist(master));
    const refs = parseMasterPlaylist(master, 'hls/master.m3u8');
    assert.deepEqual(
      refs.map((r) => [r.uri, r.kind, r.iFrame, r.bandwidthBps, r.averageBandwidthBps, r.height, r.groupId]),
      [
        ['hls/v0.m3u8', 'video', false, 1039353, 977967, 360, 'audio'],
        ['hls/audio/en.m3u8', 'audio', false, undefined, undefined, undefined, 'audio'],
        ['hls/subs.m3u8', 'subtitles', false, undefined, undefined, undefined, 'text'],
        ['hls/v1.m3u8', 'video', false, 2039353, 1877967, 540, 'audio'],
        ['hls/v0_iframe.m3u8', 'video', true, 46624, undefined, 360, undefined],
      ],
    );
  });

  it('reads byte ranges with explicit and implied offsets, and a BYTERANGE init map', () => {
    const rendition = parseMediaPlaylist(
      `#EXTM3U
#EXT-X-VERSION:7
#EXT-X-TARGETDURATION:6
#EXT-X-PLAYLIST-TYPE:VOD
#EXT-X-MAP:URI="video.mp4",BYTERANGE="876@0"
#EXTINF:6.000,
#EXT-X-BYTERANGE:590920@932
video.mp4
#EXTINF:2.000,
#EXT-X-BYTERANGE:206716
video.mp4
#EXT-X-ENDLIST
`,
      'hls/video.m3u8',
      loneMediaPlaylistRef('hls/video.m3u8'),
    );
    assert.equal(rendition.container, 'fmp4');
    assert.equal(rendition.initFile, 'hls/video.mp4');
    assert.deepEqual(rendition.initRange, { offset: 0, sizeBytes: 876 });
    assert.deepEqual(
      rendition.segments.map((s) => [s.file, s.range, s.manifestStartSec, s.manifestDurationSec]),
      [
        ['hls/video.mp4', { offset: 932, sizeBytes: 590920 }, 0, 6],
        ['hls/video.mp4', { offset: 591852, sizeBytes: 206716 }, 6, 2],
      ],
    );
    assert.equal(rendition.unsupported, undefined);
  });

  it('tells MPEG-TS, fMP4 and WebVTT segments apart', () => {
    const media = (uri: string, map = '') =>
      `#EXTM3U\n#EXT-X-TARGETDURATION:2\n${map}#EXTINF:2.0,\n${uri}\n#EXT-X-ENDLIST\n`;
    const ref = loneMediaPlaylistRef('p.m3u8');
    assert.equal(parseMediaPlaylist(media('seg000.ts'), 'p.m3u8', ref).container, 'ts');
    assert.equal(parseMediaPlaylist(media('s1.m4s', '#EXT-X-MAP:URI="init.mp4"\n'), 'p.m3u8', ref).container, 'fmp4');
    assert.equal(parseMediaPlaylist(media('t/1.vtt'), 'p.m3u8', ref).container, 'text');
    assert.equal(parseMediaPlaylist(media('t/1.vtt'), 'p.m3u8', { ...ref, kind: 'subtitles' }).kind, 'other');
  });

  it('names what it cannot index although the playlist is valid: live playlists, files outside the asset', () => {
    const ref = loneMediaPlaylistRef('p.m3u8');
    const live = parseMediaPlaylist('#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\ns1.ts\n', 'p.m3u8', ref);
    assert.match(live.unsupported ?? '', /live playlist/);
    const away = parseMediaPlaylist(
      '#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\nhttps://cdn.example.com/s1.ts\n#EXT-X-ENDLIST\n',
      'p.m3u8',
      ref,
    );
    assert.match(away.unsupported ?? '', /not a file of this asset/);
    assert.equal(assetPath('a/p.m3u8', '../../etc/passwd'), undefined);
    assert.equal(assetPath('a/p.m3u8', '../b/s.ts'), 'b/s.ts');
  });

  it('takes durations from EXTINF only where whole-segment AES-128 encryption hides the media', () => {
    const encrypted = parseMediaPlaylist(
      '#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=AES-128,URI="key.bin"\n#EXTINF:2.0,\ns1.ts\n#EXT-X-ENDLIST\n',
      'p.m3u8',
      loneMediaPlaylistRef('p.m3u8'),
    );
    assert.match(encrypted.timingFromManifest ?? '', /AES-128/);
    const sampleAes = parseMediaPlaylist(
      '#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://k"\n#EXTINF:2.0,\ns1.ts\n#EXT-X-ENDLIST\n',
      'p.m3u8',
      loneMediaPlaylistRef('p.m3u8'),
    );
    assert.equal(sampleAes.timingFromManifest, undefined);
  });

  it('calls a malformed playlist corrupt, naming it', () => {
    assert.throws(
      () => parseMasterPlaylist('not a playlist', 'bad.m3u8'),
      (error: unknown) =>
        isOriginError(error, 'ORIGIN_ERR_CORRUPT_MEDIA') && (error as Error).message.startsWith('bad.m3u8'),
    );
  });
});
