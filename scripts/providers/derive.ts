// `npm run providers:derive`: writes test/fakes/spec/<name>.json, the part of a provider's
// published API document our fakes check requests and responses against (test/fakes/spec/
// openapi-spec.ts): the operations our clients call and every schema they reference, with the
// prose (descriptions, summaries, examples, tags) left out, and `x-derived-from` naming the
// source, its version and the sha256 of the full document it came from.
//
//   npm run providers:derive                       every target whose full document is at hand
//   npm run providers:derive -- --calcom FILE      take a target's full document from FILE
//
// Retell has no published document of its own beside its SDK: retell.json is made from
// retell-sdk's .d.ts types every time (scripts/providers/retell.ts).
//
// A target whose full document is not at hand is re-derived from its committed file (the same
// operations and schemas: deriving is idempotent), so the command always runs.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROVIDER_TARGETS, type ProviderTarget } from './targets.js';
import { deriveRetell } from './retell.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const specDir = join(root, 'test', 'fakes', 'spec');

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Keys whose values are maps of names (property names, status codes, media types), not schemas. */
const NAME_MAPS = new Set(['properties', 'patternProperties', 'responses', 'content', 'schemas', 'headers']);
const PROSE = new Set(['description', 'summary', 'title']);
const DROPPED = new Set(['example', 'examples', 'tags', 'externalDocs', 'x-codeSamples', 'x-tagGroups']);

/** The node without prose; `parentKey` tells whether its keys are names (kept as they are). */
export function stripProse(node: Json, parentKey = ''): Json {
  if (Array.isArray(node)) return node.map((item) => stripProse(item));
  if (node === null || typeof node !== 'object') return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (!NAME_MAPS.has(parentKey)) {
      if (PROSE.has(key) && typeof value === 'string') continue;
      if (DROPPED.has(key)) continue;
    }
    out[key] = stripProse(value, key);
  }
  return out;
}

/** Every `#/components/...` pointer reachable from the node, following references transitively. */
function referencedComponents(doc: JsonObject, start: Json): Set<string> {
  const seen = new Set<string>();
  const visit = (node: Json): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    const ref = node.$ref;
    if (typeof ref === 'string' && ref.startsWith('#/components/') && !seen.has(ref)) {
      seen.add(ref);
      visit(pointer(doc, ref));
    }
    for (const value of Object.values(node)) visit(value);
  };
  visit(start);
  return seen;
}

function pointer(doc: JsonObject, ref: string): Json {
  let node: Json = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || Array.isArray(node) || !(key in node)) {
      throw new Error(`${ref}: not in the document`);
    }
    node = node[key]!;
  }
  return node;
}

export function derive(target: ProviderTarget, full: JsonObject, source: JsonObject): JsonObject {
  const paths: JsonObject = {};
  const fullPaths = full.paths as JsonObject;
  for (const [method, path] of target.operations) {
    const item = fullPaths[path] as JsonObject | undefined;
    const operation = item?.[method];
    if (!item || !operation)
      throw new Error(`${target.name}: ${method.toUpperCase()} ${path} is not in the document`);
    const kept = (paths[path] ??= {}) as JsonObject;
    if (item.parameters) kept.parameters = item.parameters;
    kept[method] = structuredClone(operation);
  }
  const components: JsonObject = {};
  for (const ref of [...referencedComponents(full, paths)].sort()) {
    const [, , kind, name] = ref.split('/') as [string, string, string, string];
    ((components[kind] ??= {}) as JsonObject)[name] = pointer(full, ref);
  }
  const info = full.info as JsonObject;
  const corrections = target.corrections ?? [];
  for (const { pointer: at, value } of corrections) {
    const keys = at
      .slice(1)
      .split('/')
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop()!;
    let parent: Json = paths;
    for (const key of keys.slice(1)) parent = isObject(parent) ? (parent[key] ?? null) : null;
    if (keys[0] !== 'paths' || !isObject(parent) || !(last in parent))
      throw new Error(`${target.name}: correction ${at} names nothing in the derived document`);
    parent[last] = value as Json;
  }
  return stripProse({
    openapi: full.openapi!,
    info: { title: info.title!, version: info.version! },
    servers: full.servers ?? [],
    'x-derived-from': source,
    ...(corrections.length === 0
      ? {}
      : { 'x-corrections': corrections.map(({ pointer: at, why }) => ({ pointer: at, why })) }),
    paths,
    components,
  }) as JsonObject;
}

const isObject = (node: Json): node is JsonObject =>
  node !== null && typeof node === 'object' && !Array.isArray(node);

function option(name: string): string | undefined {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : undefined;
}

async function main(): Promise<void> {
  for (const target of PROVIDER_TARGETS) {
    const out = join(specDir, `${target.name}.json`);
    const given = option(target.name.split('-')[0]!) ?? target.defaultSource?.(root);
    let full: JsonObject;
    let source: JsonObject;
    if (given && existsSync(given)) {
      const text = await readFile(resolve(given), 'utf8');
      full = JSON.parse(text) as JsonObject;
      source = { ...target.origin, sha256: createHash('sha256').update(text).digest('hex') };
    } else if (existsSync(out)) {
      full = JSON.parse(await readFile(out, 'utf8')) as JsonObject;
      source = full['x-derived-from'] as JsonObject;
      process.stdout.write(`${target.name}: full document not at hand; re-deriving from ${out}\n`);
    } else {
      process.stdout.write(
        `${target.name}: no document (pass --${target.name.split('-')[0]} FILE); skipped\n`,
      );
      continue;
    }
    const derived = derive(target, full, source);
    await writeFile(out, `${JSON.stringify(derived, null, 1)}\n`);
    const count = Object.keys((derived.components as JsonObject).schemas ?? {}).length;
    process.stdout.write(
      `${target.name}: ${target.operations.length} operations, ${count} schemas → ${out}\n`,
    );
  }
  // Retell's document is made from retell-sdk's types (scripts/providers/retell.ts), always at hand.
  const retell = deriveRetell(root);
  const out = join(specDir, 'retell.json');
  await writeFile(out, `${JSON.stringify(retell, null, 1)}\n`);
  const count = Object.keys((retell.components as JsonObject).schemas as JsonObject).length;
  process.stdout.write(
    `retell: ${Object.keys(retell.paths as JsonObject).length} paths, ${count} schemas → ${out}\n`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main();
