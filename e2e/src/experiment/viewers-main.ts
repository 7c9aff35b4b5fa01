/**
 * The experiment's simulated viewers, run on the lab's player side (`ip netns exec <player ns>
 * node viewers-main.js <plan-json>`): progressive-download viewers and player-sim DASH players,
 * each on its own connection (from its own address, on its own link, in a population lab),
 * starting at seeded random times. Each learns its connection's A/B
 * group from the origin's Server-Timing header. One JSON line per finished session on stdout.
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { mersenne } from 'pure-rand/generator/mersenne';
import { loadContent, playLiveSession, realClock, runProgressive, type SessionResult } from '@trickle/player-sim';
import { assetPath } from '../qoe/asset-path.js';
import { groupFromServerTiming, progressiveMediaFromTable, type ViewerPlan, type ViewerReport } from './viewers.js';

const plan = JSON.parse(process.argv[2] ?? '{}') as ViewerPlan;
const generator = mersenne(plan.seed);
const startOffsetsMs = Array.from(
  { length: plan.dash + plan.progressive },
  () => uniformFloat64(generator) * plan.startSpreadMs,
);

function report(line: ViewerReport): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function groupRecorder(): {
  onResponseHeaders: (headers: Record<string, string | string[] | undefined>) => void;
  group: () => string | null;
} {
  const seen = new Set<string>();
  return {
    onResponseHeaders: (headers) => {
      const group = groupFromServerTiming(headers['server-timing']);
      if (group !== undefined) seen.add(group);
    },
    // A session whose connection was replaced mid-way may have met two groups.
    group: () => (seen.size === 0 ? null : seen.size === 1 ? [...seen][0]! : 'mixed'),
  };
}

async function viewer(
  kind: 'dash' | 'progressive',
  index: number,
  startOffsetMs: number,
  play: (recorder: ReturnType<typeof groupRecorder>) => Promise<SessionResult>,
): Promise<void> {
  await realClock.sleep(startOffsetMs);
  const recorder = groupRecorder();
  try {
    const result = await play(recorder);
    report({ kind, index, startOffsetMs, group: recorder.group(), result });
  } catch (error) {
    report({ kind, index, startOffsetMs, group: recorder.group(), error: (error as Error).message });
  }
}

const media =
  plan.progressive > 0 && plan.progressiveTable !== undefined
    ? progressiveMediaFromTable(plan.progressiveTable)
    : undefined;
const content = plan.dash > 0 ? await loadContent(`${plan.originUrl}${assetPath(plan.asset, 'dashjs')}`) : undefined;
const viewers: Promise<void>[] = [];
for (let i = 0; i < plan.progressive; i++) {
  viewers.push(
    viewer('progressive', i, startOffsetsMs[i]!, (recorder) =>
      runProgressive({
        url: `${plan.originUrl}${assetPath(plan.asset, 'native')}`,
        media: media!,
        clock: realClock,
        settings: { sessionSeconds: plan.sessionSeconds },
        onResponseHeaders: recorder.onResponseHeaders,
        localAddress: plan.localAddresses?.[i],
      }),
    ),
  );
}
for (let i = 0; i < plan.dash; i++) {
  viewers.push(
    viewer('dash', i, startOffsetsMs[plan.progressive + i]!, (recorder) =>
      playLiveSession(
        content!,
        plan.abr,
        { sessionSeconds: plan.sessionSeconds, maxBufferSec: plan.maxBufferSec, startSec: plan.startSec },
        {
          cmcd: plan.cmcd,
          onResponseHeaders: recorder.onResponseHeaders,
          localAddress: plan.localAddresses?.[plan.progressive + i],
        },
      ),
    ),
  );
}
await Promise.all(viewers);
report({ done: true });
