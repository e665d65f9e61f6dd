// `npm run docs:config`: writes the Configuration table, generated from the schema, into README.md.
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configTable, withTable } from './config-table.js';

const readmePath = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'README.md');
const readme = await readFile(readmePath, 'utf8');
const updated = withTable(readme, await configTable(readmePath));
if (updated === readme) {
  process.stdout.write('README.md: the Configuration table is up to date\n');
} else {
  await writeFile(readmePath, updated);
  process.stdout.write('README.md: Configuration table rewritten from core/platform/config/schema.ts\n');
}
