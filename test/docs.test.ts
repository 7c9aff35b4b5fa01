/**
 * The README and docs/ as a set of pages: every relative link lands on a file of the repository
 * (and, with a #fragment, on a heading of that page), every docs page is reachable from the README,
 * and the README stays a front door (its first screen says what this is and how to run it).
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const docsDir = join(repoRoot, 'docs');
const pages = [
  join(repoRoot, 'README.md'),
  ...readdirSync(docsDir)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(docsDir, f)),
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(page: string): Set<string> {
  const text = readFileSync(page, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!)));
}

/** Markdown links and images outside code blocks and code spans: [text](target). */
function linksOf(page: string): string[] {
  const text = readFileSync(page, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)\)/g)].map((m) => m[1]!);
}

describe('the README and docs/', () => {
  it('link only to files that exist, and to headings that exist', () => {
    const dead: string[] = [];
    for (const page of pages) {
      for (const link of linksOf(page)) {
        if (/^[a-z]+:/.test(link)) continue;
        const [path, fragment] = link.split('#') as [string, string | undefined];
        const target = path === '' ? page : resolve(dirname(page), path);
        const where = `${relative(repoRoot, page)} -> ${link}`;
        if (!existsSync(target)) {
          dead.push(`${where}: no such file`);
          continue;
        }
        if (
          fragment !== undefined &&
          statSync(target).isFile() &&
          target.endsWith('.md') &&
          !anchorsOf(target).has(fragment)
        )
          dead.push(`${where}: no heading #${fragment}`);
      }
    }
    assert.deepEqual(dead, []);
  });

  it('reach every docs page from the README', () => {
    const reached = new Set<string>();
    const queue = [join(repoRoot, 'README.md')];
    while (queue.length > 0) {
      const page = queue.shift()!;
      if (reached.has(page)) continue;
      reached.add(page);
      for (const link of linksOf(page)) {
        const path = link.split('#')[0]!;
        if (/^[a-z]+:/.test(link) || !path.endsWith('.md')) continue;
        const target = resolve(dirname(page), path);
        if (target.startsWith(docsDir) && existsSync(target)) queue.push(target);
      }
    }
    const unreached = pages.filter((page) => !reached.has(page)).map((page) => relative(repoRoot, page));
    assert.deepEqual(unreached, []);
  });

  it('keep the README a front door: short, with the two commands and the player page on its first screen', () => {
    const lines = readFileSync(join(repoRoot, 'README.md'), 'utf8').split('\n');
    assert.ok(lines.length <= 150, `the README is ${lines.length} lines (a front door: at most 150)`);
    const firstScreen = lines.slice(0, 45).join('\n');
    assert.match(firstScreen, /\.\/scripts\/setup && npm start/);
    assert.match(firstScreen, /\.\/scripts\/setup && npm test/);
    assert.match(firstScreen, /http:\/\/127\.0\.0\.1:8080\/player\//);
  });
});
