/**
 * The soak's players, run on the lab's player side (`ip netns exec <player ns> node
 * soak-players.js <plan-json>`): `players` player-sim live sessions at a time, each player starting
 * a new session (new connection) when its last one ends, until the deadline. A failed session is
 * counted, not fatal. One JSON line every few seconds ({ sessions, errors, rebuffers }) and a last
 * one with `done: true`.
 */
import { loadContent, playLiveSession, realClock } from '@trickle/player-sim';

interface Plan {
  readonly manifestUrl: string;
  readonly players: number;
  readonly durationMs: number;
  readonly sessionSeconds: number;
}

const plan = JSON.parse(process.argv[2] ?? '{}') as Plan;
const content = await loadContent(plan.manifestUrl);
const deadlineMs = performance.now() + plan.durationMs;
const totals = { sessions: 0, errors: 0, rebuffers: 0, lastError: '' };
const report = (done = false) => process.stdout.write(`${JSON.stringify({ ...totals, done })}\n`);
const ticker = setInterval(report, 5000);

async function player(index: number): Promise<void> {
  // Spread the starts over the first session's length, as viewers arrive.
  await realClock.sleep((index / plan.players) * Math.min(plan.sessionSeconds * 1000, plan.durationMs / 4));
  while (performance.now() < deadlineMs) {
    const sessionSeconds = Math.min(plan.sessionSeconds, (deadlineMs - performance.now()) / 1000);
    try {
      const result = await playLiveSession(content, 'dynamic', { sessionSeconds, maxBufferSec: 30 }, { cmcd: true });
      totals.sessions++;
      totals.rebuffers += result.rebuffers.length;
    } catch (error) {
      totals.errors++;
      totals.lastError = (error as Error).message;
      await realClock.sleep(1000);
    }
  }
}

await Promise.all(Array.from({ length: plan.players }, (_, i) => player(i)));
clearInterval(ticker);
report(true);
