/**
 * Content made by another packager, played for real: Shaka Packager's default VOD output (the DASH
 * on-demand profile, SegmentBase + sidx, and HLS byte ranges into the same files) from the packaging
 * corpus, served by `trickle serve` under the paper's trickle (R: each segment's own rate, after a
 * startup window of the first segment) in the lab's origin namespace and played by dash.js (the MPD) and hls.js
 * (the playlists) in Debian Chromium across a 20 Mbit/s, 40 ms link. Both play to the end with every
 * body equal to its file's bytes, and the origin's flow records show each range request mapped to
 * its segment and throttled at that segment's own rate. (The default, trickle-abr, goes at full
 * speed while a viewer's buffer is below 5 s: all of a 6 s clip.)
 */
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { teardownClamp } from '@trickle/native';
import type { FlowRecord } from '@trickle/origin';
import { labDown, labUp, launchChromium, symmetricLink, type Lab, type LaunchedChromium } from '../../src/index.js';
import { machineStalls, playToEnd, starvedStalls, type PlayedSession } from '../../src/index.js';
import { skipUnless, testCorpusRoot } from '../helpers/requirements.js';

const corpus = testCorpusRoot();
const skip = skipUnless("the other packagers' content in real players", { root: true, chromium: true });
const cli = resolve(import.meta.dirname, '..', '..', '..', '..', 'bin', 'trickle.js');
const asset = 'shaka-on-demand';
const clampCgroup = 'trickle-test-packagers';
const clampPinDir = '/run/trickle/bpf-test-packagers';
const startupSeconds = 2;

interface IndexSummary {
  renditions: {
    id: string;
    kind: string;
    addressing: string;
    segments: {
      file: string;
      number: number;
      offsetBytes?: number;
      sizeBytes: number;
      startSec: number;
      bitrateBps: number;
    }[];
  }[];
}

describe('an on-demand (SegmentBase) asset from Shaka Packager in dash.js and hls.js, through the lab', {
  skip,
}, () => {
  let lab: Lab;
  let base: string;
  let chromium: LaunchedChromium;
  const sessions = new Map<string, PlayedSession>();
  let flows: FlowRecord[] = [];
  let index: IndexSummary;

  before(async () => {
    lab = await labUp('tpkg', symmetricLink({ rateBps: 20e6, rttMs: 40, bufferBdp: 2 }));
    base = `http://${lab.address('origin')}:8091`;
    // The corpus clip is 6 s, all of it startup at the default 35 s: the startup window is cut to its first
    // segment (2 s), so the later two are throttled. Not to 0 s: at 1.2 R from the first byte a player's buffer
    // grows by ~0.3 s a segment, and dash.js stalled on it (ci29: 566 ms at 6.1 s with 0.05 s buffered; waits
    // of 140-460 ms under 500 ms in most runs), which is the paper's rule without its startup phase, not a
    // delivery fault.
    lab.spawn(
      'origin',
      [
        process.execPath,
        cli,
        'serve',
        '--media',
        corpus,
        '--host',
        lab.address('origin'),
        '--public-ops',
        '--port',
        '8091',
        '--startup-seconds',
        String(startupSeconds),
        '--policy',
        'trickle',
        '--log-level',
        'warn',
      ],
      {
        stdio: 'inherit',
        env: {
          ...process.env,
          TRICKLE_DELIVERY__CLAMP__CGROUP: clampCgroup,
          TRICKLE_DELIVERY__CLAMP__PIN_DIR: clampPinDir,
        },
      },
    );
    await lab.waitForHttp(`${base}/healthz`);
    index = JSON.parse(await lab.output('player', ['curl', '-sf', `${base}/api/assets/${asset}`])) as IndexSummary;
    chromium = await launchChromium({ namespace: lab.namespace('player') });
    const played = await Promise.all(
      ['dashjs', 'hlsjs'].map((player) =>
        playToEnd(chromium.context, base, asset, join(corpus, asset), `player=${player}`),
      ),
    );
    sessions.set('dashjs', played[0]!);
    sessions.set('hlsjs', played[1]!);
    flows = (
      JSON.parse(await lab.output('player', ['curl', '-sf', `${base}/api/flows?limit=100000`])) as {
        flows: FlowRecord[];
      }
    ).flows;
  });

  after(async () => {
    await chromium?.close();
    await labDown('tpkg');
    await teardownClamp({ cgroup: clampCgroup, pinDir: clampPinDir });
  });

  it("the index has the on-demand files' segments from their sidx", () => {
    const video = index.renditions.filter((r) => r.kind === 'video');
    assert.equal(video.length, 2);
    for (const rendition of index.renditions) assert.equal(rendition.addressing, 'sidx', rendition.id);
  });

  for (const player of ['dashjs', 'hlsjs']) {
    it(
      `${player} plays it to the end, every body the file's bytes, every segment request ` +
        `paced at its segment's rate`,
      () => {
        const session = sessions.get(player)!;
        assert.deepEqual(session.errors, []);
        assert.equal(session.ended, true);
        assert.deepEqual(session.corrupt, [], 'every media body equals its file');
        assert.ok(session.bodiesChecked >= 6, `${session.bodiesChecked} media bodies checked`);
        // A confirmed stall with media ahead is a starved decoder beside the lab lane (CI, once: 988 ms
        // at 5.5 s), and a starved one right after a video freeze the machine's too: printed, not failed.
        assert.deepEqual(starvedStalls(session), [], 'no stall the delivery made on a 20 Mbit/s link');
        const machine = machineStalls(session);
        if (machine.length > 0) console.log(`# ${player}: stalls the machine made ${JSON.stringify(machine)}`);
        if (session.rebuffers.length > 0)
          console.log(`# ${player}: waiting episodes ${JSON.stringify(session.rebuffers)}`);
      },
    );
  }

  it("records each range request as its segment, throttled at the segment's own rate", () => {
    const segments = flows.filter((f) => f.asset === asset && f.role === 'segment');
    // Both players fetch every segment of the rendition they play (3 video segments of 6 s, and audio).
    assert.ok(segments.length >= 8, `${segments.length} segment responses`);
    const segmentOf = (flow: FlowRecord) =>
      index.renditions.find((r) => r.id === flow.rendition)!.segments.find((s) => s.number === flow.segmentNumber)!;
    for (const flow of segments) {
      const segment = segmentOf(flow);
      assert.ok(
        flow.range.start >= segment.offsetBytes! && flow.range.end < segment.offsetBytes! + segment.sizeBytes,
        `${flow.file} ${flow.range.start}-${flow.range.end} lies in segment ${segment.number}`,
      );
      assert.equal(flow.policy, 'trickle');
      assert.ok(
        flow.mediaRateBps !== null && Math.abs(flow.mediaRateBps.mean / segment.bitrateBps - 1) < 0.005,
        `${flow.file} #${flow.segmentNumber}: media rate ${flow.mediaRateBps?.mean} for ${segment.bitrateBps}`,
      );
      // The paper's R is the segment's own rate: what its throttling phase aimed at.
      if (flow.throttling !== null)
        assert.ok(
          flow.targetRateBps !== null && Math.abs(flow.targetRateBps.mean / segment.bitrateBps - 1) < 0.005,
          `${flow.file} #${flow.segmentNumber}: aimed at ${flow.targetRateBps?.mean} for ${segment.bitrateBps}`,
        );
    }
    // Past the startup window, a segment the kernel had acknowledged within its first round trips had no phase to
    // throttle; most were throttled.
    const pastStartup = segments.filter((f) => segmentOf(f).startSec >= startupSeconds);
    const throttled = pastStartup.filter((f) => f.throttling !== null && f.completed);
    assert.ok(
      pastStartup.length >= 4 && throttled.length >= pastStartup.length / 2,
      `${throttled.length} of ${pastStartup.length} segment responses past the startup window throttled`,
    );
  });
});
