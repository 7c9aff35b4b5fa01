import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rewriteMasterPlaylist, rewriteMediaPlaylist } from '../../src/media/hls-rewrite.js';

describe('HLS rewrite', () => {
  it('puts the peak in BANDWIDTH and the average in AVERAGE-BANDWIDTH', () => {
    const master = [
      '#EXTM3U',
      '#EXT-X-VERSION:7',
      '#EXT-X-STREAM-INF:BANDWIDTH=481197,RESOLUTION=416x234,CODECS="avc1.64000d,mp4a.40.2"',
      'media_0.m3u8',
      '',
    ].join('\n');
    const out = rewriteMasterPlaylist(
      master,
      new Map([['media_0.m3u8', { peakBps: 900_000.2, averageBps: 500_000, frameRate: 30 }]]),
    );
    assert.equal(
      out,
      [
        '#EXTM3U',
        '#EXT-X-VERSION:7',
        '#EXT-X-INDEPENDENT-SEGMENTS',
        '#EXT-X-STREAM-INF:BANDWIDTH=900001,AVERAGE-BANDWIDTH=500000,RESOLUTION=416x234,CODECS="avc1.64000d,mp4a.40.2",FRAME-RATE=30.000',
        'media_0.m3u8',
        '',
      ].join('\n'),
    );
    assert.equal(
      rewriteMasterPlaylist(out, new Map([['media_0.m3u8', { peakBps: 900_001, averageBps: 500_000, frameRate: 30 }]])),
      out,
      'idempotent',
    );
  });

  it('marks media playlists VOD and drops wall-clock dates', () => {
    const media = [
      '#EXTM3U',
      '#EXT-X-TARGETDURATION:2',
      '#EXT-X-MAP:URI="init-0.m4s"',
      '#EXTINF:2.0,',
      '#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:00Z',
      'a.m4s',
      '#EXT-X-ENDLIST',
    ].join('\n');
    assert.equal(
      rewriteMediaPlaylist(media),
      [
        '#EXTM3U',
        '#EXT-X-TARGETDURATION:2',
        '#EXT-X-PLAYLIST-TYPE:VOD',
        '#EXT-X-MAP:URI="init-0.m4s"',
        '#EXTINF:2.0,',
        'a.m4s',
        '#EXT-X-ENDLIST',
      ].join('\n'),
    );
  });
});
