import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BEGIN, END, between, configTable, withTable } from '../../scripts/docs/config-table.js';

const readmePath = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'README.md');

describe("README's Configuration table", () => {
  it('is the one the schema (core/platform/config/schema.ts) gives', async () => {
    const readme = await readFile(readmePath, 'utf8');
    expect(readme, `README.md must hold ${BEGIN} and ${END}`).toContain(BEGIN);
    const expected = withTable(readme, await configTable(readmePath));
    expect(
      between(readme),
      "README.md's Configuration table differs from core/platform/config/schema.ts: run `npm run docs:config`",
    ).toBe(between(expected));
  });
});
