/**
 * The house's arrows, from the sources themselves: which package may import which (through its
 * public entry only, never a path into another package's files), and no import circle inside a
 * package, type-only imports included (a circle of types still ties two modules' designs together).
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const repoRoot = resolve(import.meta.dirname, '..', '..');

/** Each part of the repository and the parts it may import. The benchmarks use the CLI's packages, never the CLI. */
const allowed: Readonly<Record<string, readonly string[]>> = {
  native: [],
  origin: ['native'],
  'player-sim': ['origin'],
  e2e: ['native', 'origin', 'player-sim'],
  cli: ['native', 'origin', 'player-sim', 'e2e'],
  bench: ['native', 'origin', 'player-sim', 'e2e'],
};
const sourceDirs: Readonly<Record<string, string>> = {
  native: 'native/src',
  origin: 'origin/src',
  'player-sim': 'player-sim/src',
  e2e: 'e2e/src',
  cli: 'cli/src',
  bench: 'bench',
};

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'results' ? [] : tsFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Module specifiers of a file's static imports and re-exports (`import ... from`, `export ... from`, bare `import '...'`). */
function specifiers(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'/gms)) found.push(match[1]!);
  for (const match of source.matchAll(/^\s*import\s+'([^']+)'/gm)) found.push(match[1]!);
  return found;
}

/** The workspace a `@trickle/<name>[/sub]` specifier names. */
function workspaceOf(specifier: string): string | undefined {
  const match = /^@trickle\/([^/]+)/.exec(specifier);
  return match?.[1];
}

/** Strongly connected components with more than one module, or a module importing itself (Tarjan). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

describe('the import graph', () => {
  for (const [part, dir] of Object.entries(sourceDirs)) {
    it(`${part}: imports only ${allowed[part]!.join(', ') || 'no other package'}, through their entries, and has no circle`, () => {
      const files = tsFiles(join(repoRoot, dir));
      assert.ok(files.length > 0, `sources under ${dir}`);
      const wrong: string[] = [];
      const graph = new Map<string, string[]>();
      for (const file of files) {
        const from = relative(repoRoot, file);
        const edges: string[] = [];
        for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
          if (specifier.startsWith('.')) {
            const target = relative(repoRoot, resolve(dirname(file), specifier)).replace(/\.js$/, '.ts');
            if (!target.startsWith(`${dir}/`)) wrong.push(`${from} reaches outside ${dir}: ${specifier}`);
            else edges.push(target);
            continue;
          }
          const workspace = workspaceOf(specifier);
          if (workspace === undefined) continue;
          if (workspace === part) wrong.push(`${from} imports its own package by name: ${specifier}`);
          else if (!allowed[part]!.includes(workspace)) wrong.push(`${from} imports ${specifier}`);
        }
        graph.set(from, edges);
      }
      assert.deepEqual(wrong, []);
      assert.deepEqual(circles(graph), [], `import circles in ${dir}`);
    });
  }
});
