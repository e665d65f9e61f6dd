#!/usr/bin/env node
// `npm run build`'s second step: tsc emits only JavaScript, so the files the compiled processes
// read at run time are copied beside their modules in dist/: the widget's static assets and the
// Redis scripts (*.lua, loaded by core/platform/redis-script.ts relative to the module) and the
// compliance data (core/domain/compliance/*.json, read and hashed by calling-hours.ts).
// `node scripts/build/copy-assets.mjs [out]`: into `out` instead of dist/.
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
// The output folder: dist/, or the one named (the tests' compiled copy, scripts/local/compiled.ts).
const out = process.argv[2] ?? join(root, 'dist');
const ASSET = /\.(lua|js|css|html)$/;
const copy = (from) => {
  const to = join(out, from);
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(join(root, from), to);
};

for (const dir of ['api', 'core', 'jobs', 'workers']) {
  for (const file of readdirSync(join(root, dir), { recursive: true })) {
    if (String(file).endsWith('.lua')) copy(join(dir, String(file)));
    if (/^domain[\\/]compliance[\\/][^\\/]+\.json$/.test(String(file))) copy(join(dir, String(file)));
  }
}
for (const file of readdirSync(join(root, 'dashboard', 'widget'))) {
  if (ASSET.test(file)) copy(join('dashboard', 'widget', file));
}
