/** Charts rendered to SVG in Node by Vega itself: the marks and titles of the spec, nothing else. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderVegaLiteSvg } from '../../src/report/vega-svg.js';

describe('Vega-Lite to SVG', () => {
  it('draws one mark per datum with the axis titles, as a standalone SVG', async () => {
    const svg = await renderVegaLiteSvg({
      data: {
        values: [
          { policy: 'bulk', queueing: 28, bitrate: 2.84 },
          { policy: 'trickle-abr', queueing: 2.4, bitrate: 2.84 },
          { policy: 'app-pacing', queueing: 7, bitrate: 2.84 },
        ],
      },
      mark: { type: 'point', filled: true },
      encoding: {
        x: { field: 'queueing', type: 'quantitative', title: 'probe queueing p95 (ms)' },
        y: { field: 'bitrate', type: 'quantitative', title: 'mean bitrate (Mbit/s)' },
        color: { field: 'policy', type: 'nominal' },
      },
    });
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.ok(svg.includes('probe queueing p95 (ms)') && svg.includes('mean bitrate (Mbit/s)'));
    for (const policy of ['bulk', 'trickle-abr', 'app-pacing'])
      assert.ok(svg.includes(`>${policy}<`), `legend: ${policy}`);
    const points = svg.match(/aria-roledescription="point"/g) ?? [];
    assert.equal(points.length, 3, 'a point per cell');
  });
});
