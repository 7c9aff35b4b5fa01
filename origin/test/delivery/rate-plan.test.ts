import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { progressiveRateBytesPerSec, segmentRateBytesPerSec, startupEndByte } from '../../src/delivery/rate-plan.js';
import { buildAssetIndex, type AssetIndex } from '../../src/media/media-index.js';
import { demoDir } from '../helpers/media.js';

describe('per-VBR-block rates on the demo', () => {
  let index: AssetIndex;
  before(async () => {
    index = await buildAssetIndex('demo', demoDir(), { mpdFile: 'manifest.mpd', hlsMasterFile: undefined, progressiveFile: 'progressive.mp4' });
  });

  it('gives each segment its own rate, which varies like the content', () => {
    const top = index.renditions.find((r) => r.height === 720)!;
    const rates = top.segments.map(segmentRateBytesPerSec);
    top.segments.forEach((s, i) => assert.equal(rates[i], s.sizeBytes / s.durationSec));
    assert.ok(Math.max(...rates) > 3 * Math.min(...rates), 'a per-file rate would be wrong for most segments');
  });

  it('gives progressive blocks the rate of the media around them, and the startup boundary in bytes', () => {
    const progressive = index.progressive!;
    const map = progressive.byteTime;
    const size = progressive.sizeBytes;
    const rates = [0, 0.25, 0.5, 0.75].map((f) => progressiveRateBytesPerSec(map, Math.floor(size * f), 2, size));
    for (const rate of rates) assert.ok(rate > 0 && Number.isFinite(rate));
    assert.ok(Math.max(...rates) > 1.5 * Math.min(...rates), `rates vary along the file: ${rates.map(Math.round).join(', ')}`);
    const mean = size / progressive.durationSec;
    const windowed = Array.from({ length: 12 }, (_, i) => progressiveRateBytesPerSec(map, map.byteAtMediaTime(i * 2), 2, size));
    const average = windowed.reduce((a, b) => a + b, 0) / windowed.length;
    assert.ok(Math.abs(average / mean - 1) < 0.25, `windowed rates average ${average} vs file mean ${mean}`);
    const end = startupEndByte(map, 0, 10);
    assert.ok(Math.abs(map.mediaTimeAtByte(end) - 10) < 0.1);
    const seek = map.byteAtMediaTime(12);
    assert.ok(Math.abs(map.mediaTimeAtByte(startupEndByte(map, seek, 6)) - 18) < 0.1, 'a seek starts its own startup phase');
  });
});
