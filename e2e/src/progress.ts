/**
 * Progress for long-running commands (the CLI's lab runs, the benchmarks): a bar on a terminal, a line per 10% elsewhere
 * (CI logs).
 */
import { SingleBar, Presets } from 'cli-progress';

export interface StageProgress {
  update(stage: string, fraction: number): void;
  stop(): void;
}

export function stageProgress(stream: NodeJS.WriteStream = process.stderr): StageProgress {
  if (stream.isTTY === true) {
    const bar = new SingleBar(
      { format: '{stage} [{bar}] {percentage}% | ETA {eta_formatted}', stream, hideCursor: true },
      Presets.shades_classic,
    );
    let current = '';
    return {
      update(stage, fraction) {
        if (stage !== current) {
          if (current !== '') bar.stop();
          current = stage;
          bar.start(100, 0, { stage: stage.padEnd(11) });
        }
        bar.update(Math.round(fraction * 100), { stage: stage.padEnd(11) });
      },
      stop() {
        if (current !== '') bar.stop();
      },
    };
  }
  const reported = new Map<string, number>();
  return {
    update(stage, fraction) {
      const step = Math.floor(fraction * 10);
      if ((reported.get(stage) ?? -1) >= step) return;
      reported.set(stage, step);
      stream.write(`${stage}: ${step * 10}%\n`);
    },
    stop() {},
  };
}
