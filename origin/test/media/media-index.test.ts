import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { buildAssetIndex, type AssetIndex } from '../../src/media/media-index.js';
import { ffprobe } from '../../src/media/ffmpeg.js';
import { demoDir } from '../helpers/media.js';

describe('media index on the generated demo', () => {
  let index: AssetIndex;
  let clipDurationSec: number;

  before(async () => {
    index = await buildAssetIndex('demo', demoDir(), {
      mpdFiles: ['manifest.mpd'],
      playlistFiles: ['master.m3u8'],
      mp4Files: ['progressive.mp4'],
    });
    const probe = await ffprobe(join(demoDir(), 'progressive.mp4'), ['-select_streams', 'v:0']);
    clipDurationSec = Number(probe.streams[0]!.duration);
  });

  it('has the 4-rung video ladder and one audio rendition', () => {
    const video = index.renditions.filter((r) => r.kind === 'video');
    assert.deepEqual(
      video.map((r) => r.height),
      [234, 360, 540, 720],
    );
    assert.deepEqual(
      video.map((r) => r.width),
      [416, 640, 960, 1280],
    );
    assert.equal(index.renditions.filter((r) => r.kind === 'audio').length, 1);
    assert.equal(index.segmentSource, 'mpd');
    assert.equal(index.hlsPlaylists.length, 5);
  });

  it('puts each kind on its own ABR ladder, video rungs with the audio added, and tells audio the top video rung', () => {
    const audio = index.renditions.find((r) => r.kind === 'audio')!;
    const video = index.renditions.filter((r) => r.kind === 'video');
    const audioLadder = index.abrLadders.get(audio.id)!;
    const topVideo = index.abrLadders.get(video.at(-1)!.id)!;
    assert.deepEqual(audioLadder.ladderBps, [audioLadder.renditionBps]);
    assert.equal(topVideo.ladderBps.length, 4);
    assert.equal(topVideo.renditionBps, topVideo.ladderBps.at(-1));
    assert.equal(
      topVideo.renditionBps - (video.at(-1)!.declaredBandwidthBps ?? video.at(-1)!.averageBitrateBps),
      audioLadder.renditionBps,
    );
    for (const rendition of index.renditions)
      assert.equal(index.abrLadders.get(rendition.id)?.videoTopBps, topVideo.renditionBps);
  });

  it('sums segment durations to the clip duration within one frame (video) or one AAC frame (audio)', () => {
    for (const rendition of index.renditions) {
      const tolerance = rendition.kind === 'video' ? 1 / 30 : 1024 / 48000 + 0.05;
      assert.ok(
        Math.abs(rendition.durationSec - clipDurationSec) <= tolerance,
        `${rendition.id}: ${rendition.durationSec} vs ${clipDurationSec}`,
      );
    }
  });

  it('has contiguous segments whose starts follow from their durations', () => {
    for (const rendition of index.renditions) {
      let expected = rendition.segments[0]!.startSec;
      for (const segment of rendition.segments) {
        assert.ok(
          Math.abs(segment.startSec - expected) < 1e-6,
          `${segment.file} starts at ${segment.startSec}, expected ${expected}`,
        );
        expected += segment.durationSec;
      }
    }
  });

  it('records per-segment sizes equal to the file sizes', async () => {
    for (const rendition of index.renditions) {
      for (const segment of rendition.segments) {
        const { size } = await stat(join(demoDir(), segment.file));
        assert.equal(segment.sizeBytes, size, segment.file);
        assert.ok(Math.abs(segment.bitrateBps - (size * 8) / segment.durationSec) < 1e-6);
      }
    }
  });

  it('is true VBR: per-segment bitrates swing at least +-30% around each video rendition mean', () => {
    for (const rendition of index.renditions.filter((r) => r.kind === 'video')) {
      assert.ok(
        rendition.peakSegmentBitrateBps >= 1.3 * rendition.meanSegmentBitrateBps,
        `${rendition.id}: peak ${rendition.peakSegmentBitrateBps} mean ${rendition.meanSegmentBitrateBps}`,
      );
      assert.ok(
        rendition.minSegmentBitrateBps <= 0.7 * rendition.meanSegmentBitrateBps,
        `${rendition.id}: min ${rendition.minSegmentBitrateBps} mean ${rendition.meanSegmentBitrateBps}`,
      );
    }
  });

  it('keeps each rung near its nominal bitrate (400k/800k/1.4M/2.8M within a factor of 1.6)', () => {
    const nominal = [400e3, 800e3, 1.4e6, 2.8e6];
    index.renditions
      .filter((r) => r.kind === 'video')
      .forEach((rendition, i) => {
        const ratio = rendition.averageBitrateBps / nominal[i]!;
        assert.ok(ratio > 1 / 1.6 && ratio < 1.6, `${rendition.id}: ${rendition.averageBitrateBps} bps`);
      });
  });

  it('indexes the progressive MP4 as faststart with its duration', () => {
    assert.ok(index.progressive !== undefined);
    assert.equal(index.progressive.faststart, true);
    assert.ok(Math.abs(index.progressive.durationSec - clipDurationSec) < 0.1);
    assert.ok(index.progressive.averageBitrateBps > 2e6);
  });

  it('looks segments and init files up by name', () => {
    const top = index.renditions.find((r) => r.height === 720)!;
    const segment = top.segments[3]!;
    assert.equal(index.segmentByFile.get(segment.file)?.segment, segment);
    assert.equal(index.renditionByInitFile.get(top.initFile!)?.id, top.id);
  });

  it('builds the same index from the HLS playlists alone', async () => {
    const fromHls = await buildAssetIndex('demo', demoDir(), {
      mpdFiles: [],
      playlistFiles: ['master.m3u8'],
      mp4Files: [],
    });
    assert.equal(fromHls.segmentSource, 'hls');
    const mpdSizes = index.renditions.map((r) => r.segments.map((s) => s.sizeBytes));
    const hlsSizes = fromHls.renditions.map((r) => r.segments.map((s) => s.sizeBytes));
    assert.deepEqual(hlsSizes.sort(), mpdSizes.sort());
  });
});
