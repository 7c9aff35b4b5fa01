/**
 * `trickle experiment <config> --out <dir>`: the paper's A/B experiment on the lab; results, CSVs and an HTML report.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import type { ExperimentResults } from '@trickle/e2e';
import { examples, stageProgress } from '@trickle/e2e/command-help';

interface ExperimentFlags {
  out: string;
  fresh?: boolean;
  reportOnly?: boolean;
}

function headline(results: ExperimentResults): string {
  const lines: string[] = [];
  for (const profile of results.profiles) {
    for (const kind of profile.kinds) {
      lines.push(`${profile.profile}, ${kind.kind}:`);
      for (const row of kind.rows) {
        const e = row.retransmissionRatePercent;
        lines.push(
          `  ${row.group.padEnd(14)} flows ${String(row.flows).padStart(5)}  ` +
            `retrans ${Number.isFinite(e.value) ? `${e.value.toFixed(3)} %` : '-'.padStart(7)}  ` +
            `srtt ${Number.isFinite(row.srttThrottledMs.value) ? `${row.srttThrottledMs.value.toFixed(1)} ms` : '-'} ` +
            ` bursts<=10 ` +
            `${percentOrDash(row.burstsAtMost10Percent)} ` +
            ` rebuffer chance ` +
            `${percentOrDash(row.rebufferChancePercent.value)} ` +
            `of ${row.sessions}`,
        );
      }
      if (kind.aa !== null) {
        const disagree = kind.aa.metrics.filter((m) => m.agree === false).map((m) => m.metric);
        lines.push(
          `  A/A ${kind.aa.groups.join(' vs ')}: ` +
            (kind.aa.agree === null
              ? 'too few connections to judge'
              : disagree.length === 0
                ? 'agree on every judged metric'
                : `disagree on ${disagree.join(', ')}`),
        );
      }
    }
  }
  for (const design of results.designs)
    lines.push(
      `${design.population} (a link per viewer) against ${design.shared} (one shared bottleneck): ` +
        `${design.differ} of ${design.judged} judged effects differ`,
    );
  return lines.join('\n');
}

export function registerExperimentCommands(program: Command): void {
  program
    .command('experiment')
    .description(
      "run an A/B experiment (the Trickle paper's method) on the lab: groups of delivery " +
        'policies over link profiles; writes results.json, CSVs and report.html (root)',
    )
    .argument('<config>', 'experiment file (YAML), e.g. experiments/trickle-ab.yaml')
    .requiredOption('--out <dir>', 'results directory; a run already there is kept (resumes after an interruption)')
    .option('--fresh', 'discard runs already in --out and start over')
    .option('--report-only', 'analyse the runs already in --out and rewrite results and report, without running')
    .addHelpText(
      'after',
      examples(
        'sudo npx trickle experiment experiments/smoke.yaml --out results/smoke',
        'sudo npx trickle experiment experiments/trickle-ab.yaml --out results/ab',
        'npx trickle experiment experiments/trickle-ab.yaml --out results/ab --report-only',
      ),
    )
    .action(async (configPath: string, flags: ExperimentFlags) => {
      // The lab and the browser harness, loaded when an experiment runs: the other commands and --help go without them.
      const { loadExperimentConfig, planRuns, requireLabPrivileges, runExperiment, writeResults } = await import(
        '@trickle/e2e'
      );
      const config = await loadExperimentConfig(configPath);
      const out = resolve(flags.out);
      if (flags.reportOnly === true) {
        const results = await writeResults(config, out, {
          commandLine: `npx trickle experiment ${configPath} --out ${flags.out}`,
        });
        process.stdout.write(`${headline(results)}\nreport: ${out}/report.html\n`);
        return;
      }
      requireLabPrivileges();
      const runs = planRuns(config);
      process.stderr.write(
        `experiment ${config.name}: ${runs.length} runs of ` +
          `about ${config.sessionSeconds + config.load.startSpreadSeconds} s ` +
          `(${config.profiles.length} profiles) -> ${out}\n`,
      );
      const progress = stageProgress();
      let lastRun = -1;
      let results: ExperimentResults;
      try {
        results = await runExperiment({
          config,
          out,
          fresh: flags.fresh,
          commandLine: `npx trickle experiment ${configPath} --out ${flags.out}`,
          onNote: (what) => process.stderr.write(`${what} ...\n`),
          onProgress: (p) => {
            if (p.stage === 'done' || p.stage === 'resumed') {
              if (p.runIndex !== lastRun)
                process.stderr.write(
                  `${p.stage === 'resumed' ? 'kept' : 'finished'} ${p.run.profile}/${p.run.id} ` +
                    `(${p.runIndex + 1}/${p.runs})\n`,
                );
              lastRun = p.runIndex;
            }
            progress.update('experiment', p.fraction);
          },
        });
      } finally {
        progress.stop();
      }
      process.stdout.write(`${headline(results)}\nreport: ${out}/report.html\n`);
    });
}

function percentOrDash(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(1)} %` : '-';
}
