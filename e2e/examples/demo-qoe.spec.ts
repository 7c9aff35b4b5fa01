/** QoE tests as a user writes them: play a manifest, assert on what viewers would see. */
import { expect, test } from '@trickle/e2e/playwright';

const origin = 'http://127.0.0.1:8093';
const dash = process.env.QOE_URL ?? `${origin}/media/demo/manifest.mpd`;

test('dash.js plays the demo without a stall', async ({ qoeSession }) => {
  const session = await qoeSession.play(dash, { player: 'dashjs', seconds: 12 });
  expect(session.errors).toEqual([]);
  expect(session.startupMs).not.toBeNull();
  expect(session.startupMs!).toBeLessThan(5_000);
  expect(session.rebuffers).toHaveLength(0);
  expect(session.playedSeconds).toBeGreaterThan(8);
});

test('hls.js plays the HLS rendition of the demo without a stall', async ({ qoeSession }) => {
  test.skip(process.env.QOE_URL !== undefined, 'needs the example origin');
  const session = await qoeSession.play(`${origin}/media/demo/master.m3u8`, { player: 'hlsjs', seconds: 12 });
  expect(session.errors).toEqual([]);
  expect(session.rebuffers).toHaveLength(0);
  expect(session.bitrateTimeline.length).toBeGreaterThan(0);
});
