// `npm run docs:config`: writes the configuration table, generated from the schema, into
// docs/configuration.md (the README links to it).
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_DOC, configTable, withTable } from './config-table.js';

const docPath = join(dirname(fileURLToPath(import.meta.url)), '..', '..', CONFIG_DOC);
const doc = await readFile(docPath, 'utf8');
const updated = withTable(doc, await configTable(docPath));
if (updated === doc) {
  process.stdout.write(`${CONFIG_DOC}: the configuration table is up to date\n`);
} else {
  await writeFile(docPath, updated);
  process.stdout.write(`${CONFIG_DOC}: configuration table rewritten from core/platform/config/schema.ts\n`);
}
