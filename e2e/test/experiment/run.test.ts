/** What the runner decides without a lab: the plan, and what an existing --out keeps on resume. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseExperimentConfig } from '../../src/experiment/config.js';
import { planRuns, prepareOut } from '../../src/experiment/run.js';

const input = {
  name: 'x',
  sessionSeconds: 30,
  seeds: [1, 2],
  groups: [
    { name: 'baseline1', policy: 'app-pacing' },
    { name: 'baseline2', policy: 'app-pacing' },
    { name: 'trickle', policy: 'trickle' },
    { name: 'trickle-reno', policy: 'trickle', congestionControl: 'reno' },
  ],
  profiles: [
    { name: 'fast', link: { rate: '20mbit', rtt: '20ms' } },
    { name: 'slow', link: { profile: 'slow-1mbit' }, seeds: [5], isolatedRuns: false },
  ],
  load: { dash: 2 },
  isolatedRuns: true,
};

describe('experiment runner', () => {
  it('plans mixed runs per seed and isolated runs per distinct group (not the A/A twin), per profile', () => {
    assert.deepEqual(
      planRuns(parseExperimentConfig(input)).map((r) => `${r.profile}/${r.id}`),
      [
        'fast/mixed-s1',
        'fast/mixed-s2',
        'fast/alone-baseline1-s1',
        'fast/alone-trickle-s1',
        'fast/alone-trickle-reno-s1',
        'slow/mixed-s5',
      ],
    );
  });

  it(
    "resumes into --out: keeps unchanged profiles' runs and every run when seeds are added, drops a changed " +
      "profile's, refuses another experiment",
    async () => {
      const out = await mkdtemp(join(tmpdir(), 'trickle-exp-'));
      try {
        const config = parseExperimentConfig(input);
        await prepareOut({ config, out });
        for (const profile of ['fast', 'slow']) {
          await mkdir(join(out, 'runs', profile), { recursive: true });
          await writeFile(join(out, 'runs', profile, 'mixed.json'), '{}');
        }
        await prepareOut({ config, out });
        assert.ok(
          existsSync(join(out, 'runs', 'fast', 'mixed.json')) && existsSync(join(out, 'runs', 'slow', 'mixed.json')),
        );
        // More seeds, for the experiment and for a profile: each run is its seed's, so every run there is stays.
        await prepareOut({
          config: parseExperimentConfig({
            ...input,
            seeds: [1, 2, 3, 4],
            profiles: [input.profiles[0], { ...input.profiles[1], seeds: [5, 6] }],
          }),
          out,
        });
        assert.ok(
          existsSync(join(out, 'runs', 'fast', 'mixed.json')) && existsSync(join(out, 'runs', 'slow', 'mixed.json')),
          'runs kept when seeds are added',
        );
        const slower = parseExperimentConfig({
          ...input,
          profiles: [
            input.profiles[0],
            { ...input.profiles[1], link: { profile: '3g-trace' } },
            { name: 'new', link: { profile: 'dsl-6mbit' } },
          ],
        });
        await prepareOut({ config: slower, out });
        assert.ok(existsSync(join(out, 'runs', 'fast', 'mixed.json')), 'unchanged profile kept');
        assert.ok(!existsSync(join(out, 'runs', 'slow')), 'changed profile discarded');
        await assert.rejects(
          prepareOut({ config: parseExperimentConfig({ ...input, sessionSeconds: 60 }), out }),
          /different experiment configuration/,
        );
        await prepareOut({ config: parseExperimentConfig({ ...input, sessionSeconds: 60 }), out, fresh: true });
        assert.ok(!existsSync(join(out, 'runs')));
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    },
  );
});
