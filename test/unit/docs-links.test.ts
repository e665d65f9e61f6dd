// The documentation holds together: every relative link of README.md and docs/*.md reaches a file
// and a heading that exist, every docs/<file>.md#<anchor> a code comment cites does too, and no
// comment cites a document that is not in the repository. Pure: reads files, starts nothing.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CODE_FOLDERS = ['api', 'core', 'jobs', 'workers', 'dashboard', 'scripts', 'bench', 'test'];
const SKIP = new Set(['node_modules', '.git', 'dist', '.local']);

/** GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces → `-`. */
const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

const withoutCode = (markdown: string): string =>
  markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const anchor = anchorOf(heading!);
    const n = seen.get(anchor) ?? 0;
    seen.set(anchor, n + 1);
    anchors.add(n === 0 ? anchor : `${anchor}-${n}`);
  }
  return anchors;
}

/** Why `target` (a path, optionally with #anchor, relative to `from`) does not resolve, or null. */
function brokenLink(from: string, target: string): string | null {
  const [path = '', anchor] = target.split('#');
  const file = path === '' ? from : resolve(dirname(from), path);
  if (!existsSync(file)) return `no file ${relative(root, file)}`;
  if (anchor !== undefined && anchor !== '' && statSync(file).isFile() && !anchorsOf(file).has(anchor)) {
    return `no heading #${anchor} in ${relative(root, file)}`;
  }
  return null;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (SKIP.has(name)) return [];
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

const markdownFiles = [
  join(root, 'README.md'),
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(root, 'docs', f)),
];
const codeFiles = CODE_FOLDERS.filter((d) => existsSync(join(root, d))).flatMap((d) =>
  filesUnder(join(root, d)).filter((f) => /\.(ts|mjs|js|py|sh|lua|md)$/.test(f)),
);

describe('documentation links', () => {
  it('every relative link of README.md and docs/*.md reaches an existing file and heading', () => {
    const broken: string[] = [];
    for (const file of markdownFiles) {
      for (const [, target] of withoutCode(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue;
        const why = brokenLink(file, target!);
        if (why !== null) broken.push(`${relative(root, file)}: (${target}) ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('every docs/<file>.md#<anchor> cited in the code exists', () => {
    const broken: string[] = [];
    for (const file of codeFiles) {
      for (const [cited] of readFileSync(file, 'utf8').matchAll(/docs\/[a-z0-9-]+\.md(?:#[\w-]+)?/g)) {
        const why = brokenLink(join(root, 'README.md'), cited);
        if (why !== null) broken.push(`${relative(root, file)}: ${cited} ${why}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('no code comment, test name or README line cites the contract or a review issue, which a reader cannot open', () => {
    // Built from pieces, so that this file does not cite them itself. Say the rule, or link a doc.
    const citations = [new RegExp('contract ' + '\u00a7', 'i'), new RegExp('\\bissue ' + '\\d', 'i')];
    const citing = [join(root, 'README.md'), ...codeFiles]
      .filter((f) => citations.some((c) => c.test(readFileSync(f, 'utf8'))))
      .map((f) => relative(root, f));
    expect(citing).toEqual([]);
  });
});
