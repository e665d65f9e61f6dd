import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BEGIN, CONFIG_DOC, END, between, configTable, withTable } from '../../scripts/docs/config-table.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const docPath = join(root, CONFIG_DOC);

describe(`the configuration table (${CONFIG_DOC})`, () => {
  it('is the one the schema (core/platform/config/schema.ts) gives', async () => {
    const doc = await readFile(docPath, 'utf8');
    expect(doc, `${CONFIG_DOC} must hold ${BEGIN} and ${END}`).toContain(BEGIN);
    const expected = withTable(doc, await configTable(docPath));
    expect(
      between(doc),
      `${CONFIG_DOC}'s table differs from core/platform/config/schema.ts: run \`npm run docs:config\``,
    ).toBe(between(expected));
  });

  it('is the only copy, and the README links to it', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    expect(readme, 'README.md must not hold a second, unchecked copy of the table').not.toContain(BEGIN);
    expect(readme).toContain(`](${CONFIG_DOC})`);
  });
});
