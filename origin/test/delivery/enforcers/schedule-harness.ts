/** Drives an enforcement as the flow meter does: each handed block adds its seconds at R to the phase's schedule. */
import type { TcpInfo } from '@trickle/native';
import type { Block, Enforcement, ScheduleProgress } from '../../../src/delivery/enforcers/enforcer.js';

export function drive(enforcement: Enforcement, reading: () => TcpInfo | undefined) {
  const schedule = { startMs: 0, handedSec: 0 };
  return {
    schedule,
    start(nowMs: number, unsent = { sizeBytes: 0, rateBytesPerSec: 0 }) {
      schedule.startMs = nowMs;
      schedule.handedSec = unsent.sizeBytes > 0 ? unsent.sizeBytes / unsent.rateBytesPerSec : 0;
      enforcement.startThrottling({ nowMs, reading: reading(), unsent });
    },
    before: (block: Block, progress?: ScheduleProgress) =>
      enforcement.beforeBlock(block, { reading: reading(), progress, schedule: { ...schedule } }),
    after(block: Block) {
      enforcement.afterBlock(block);
      schedule.handedSec += block.sizeBytes / block.rateBytesPerSec;
    },
  };
}
