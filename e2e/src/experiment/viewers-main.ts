/**
 * The experiment's simulated viewers, run on the lab's player side (`ip netns exec <player ns>
 * node viewers-main.js <plan-json>`): progressive-download viewers and player-sim DASH players,
 * each on its own connection, starting at seeded random times. Each learns its connection's A/B
 * group from the origin's Server-Timing header. One JSON line per finished session on stdout.
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { mersenne } from 'pure-rand/generator/mersenne';
import { Agent } from 'undici';
import { abrRules, defaultSessionSettings, HttpFetcher, loadContent, realClock, runProgressive, runSession, type SessionResult } from '@trickle/player-sim';
import { groupFromServerTiming, progressiveMediaFromTable, type ViewerPlan, type ViewerReport } from './viewers.js';

const plan = JSON.parse(process.argv[2] ?? '{}') as ViewerPlan;
const generator = mersenne(plan.seed);
const startOffsetsMs = Array.from({ length: plan.dash + plan.progressive }, () => uniformFloat64(generator) * plan.startSpreadMs);

function report(line: ViewerReport): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function groupRecorder(): { onResponseHeaders: (headers: Record<string, string | string[] | undefined>) => void; group: () => string | null } {
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

async function viewer(kind: 'dash' | 'progressive', index: number, startOffsetMs: number, play: (recorder: ReturnType<typeof groupRecorder>) => Promise<SessionResult>): Promise<void> {
  await realClock.sleep(startOffsetMs);
  const recorder = groupRecorder();
  try {
    const result = await play(recorder);
    report({ kind, index, startOffsetMs, group: recorder.group(), result });
  } catch (error) {
    report({ kind, index, startOffsetMs, group: recorder.group(), error: (error as Error).message });
  }
}

const media = progressiveMediaFromTable(plan.progressiveTable);
const content = plan.dash > 0 ? await loadContent(`${plan.originUrl}/media/${encodeURIComponent(plan.asset)}/manifest.mpd`) : undefined;
const rule = abrRules[plan.abr]!;
const viewers: Promise<void>[] = [];
for (let i = 0; i < plan.progressive; i++) {
  viewers.push(
    viewer('progressive', i, startOffsetsMs[i]!, (recorder) =>
      runProgressive({ url: `${plan.originUrl}/media/${encodeURIComponent(plan.asset)}/progressive.mp4`, media, clock: realClock, settings: { sessionSeconds: plan.sessionSeconds }, onResponseHeaders: recorder.onResponseHeaders }),
    ),
  );
}
for (let i = 0; i < plan.dash; i++) {
  viewers.push(
    viewer('dash', i, startOffsetsMs[plan.progressive + i]!, async (recorder) => {
      // One keep-alive connection per player, as a browser's would mostly be.
      const agent = new Agent({ connections: 1, keepAliveTimeout: 120_000 });
      try {
        const fetcher = new HttpFetcher(content!, agent, { cmcd: plan.cmcd, onResponseHeaders: recorder.onResponseHeaders });
        return await runSession(content!, rule(), fetcher, realClock, { ...defaultSessionSettings, sessionSeconds: plan.sessionSeconds, maxBufferSec: plan.maxBufferSec });
      } finally {
        await agent.close();
      }
    }),
  );
}
await Promise.all(viewers);
report({ done: true });
