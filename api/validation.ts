import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { TSchema } from '@sinclair/typebox';
import { clip, invalidRequest, quote, type ErrorDetail } from '../core/platform/errors.js';
import { isTimeZone } from '../core/platform/time-zone.js';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

/**
 * RFC 3339's date-time, as ajv-formats checks it, and a time JavaScript can hold: ajv-formats takes
 * a leap second (`23:59:60Z`), which `new Date` makes an Invalid Date, so a handler's
 * `toISOString()` threw (a 500) and a filter compared against it matched nothing (a 200 that lied).
 */
const rfc3339 = addFormats.get('date-time') as { validate: (text: string) => boolean };
export const isDateTime = (text: string): boolean =>
  rfc3339.validate(text) && Number.isFinite(Date.parse(text));

function makeAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ allErrors: true, coerceTypes, useDefaults: true, strict: false });
  addFormats(ajv, ['email', 'uri', 'uuid']);
  ajv.addFormat('date-time', { type: 'string', validate: isDateTime });
  ajv.addFormat('iana-time-zone', { type: 'string', validate: isTimeZone });
  return ajv;
}

// Bodies are typed exactly as sent; query strings and path parameters arrive as text.
const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

export type Validator = (value: unknown) => unknown;

/** Compiles once (at start); the returned function throws 400 invalid_request with JSON-pointer details. */
/**
 * The first path or query value holding a NUL character, as a detail: such a value never reaches
 * a query (PostgreSQL, under FerretDB, refuses it in a document and the lookup would fail as a
 * 500); JSON bodies are checked for it as they are read (api/middleware/body.ts).
 */
function nulDetail(value: unknown, where: 'query' | 'params'): ErrorDetail | null {
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, v] of Object.entries(value)) {
    const texts = Array.isArray(v) ? v : [v];
    if (texts.some((t) => typeof t === 'string' && t.includes('\u0000'))) {
      const path = `/${pointerToken(key)}`.slice(0, 100);
      return {
        path,
        message: `must not contain a NUL character (in the ${where === 'query' ? 'query string' : 'path'})`,
      };
    }
  }
  return null;
}

export function compileValidator(schema: TSchema, where: 'body' | 'query' | 'params'): Validator {
  const validate: ValidateFunction = (where === 'body' ? bodyAjv : textAjv).compile(schema);
  return (value) => {
    if (where !== 'body') {
      const nul = nulDetail(value, where);
      if (nul !== null)
        throw invalidRequest(
          `The ${where === 'query' ? 'query string' : 'path'} is invalid: ${nul.path} ${nul.message}.`,
          [nul],
        );
    }
    if (validate(value)) return value;
    const details = toDetails(validate.errors ?? [], where, value);
    const what = where === 'body' ? 'request body' : where === 'query' ? 'query string' : 'path';
    throw invalidRequest(`The ${what} is invalid: ${summarise(details)}.`, details);
  };
}

/** The first few problems in words (all of them are in details), never a giant string. */
const PROBLEMS_IN_MESSAGE = 3;

function summarise(details: ErrorDetail[]): string {
  const named = details.slice(0, PROBLEMS_IN_MESSAGE).map((d) => `${d.path} ${d.message}`);
  const more = details.length - named.length;
  return more > 0 ? `${named.join('; ')}; and ${more.toLocaleString('en-US')} more` : named.join('; ');
}

/** A key as one JSON-pointer token (RFC 6901), as ajv writes instancePath. */
const pointerToken = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The `id` of the innermost array item holding the value at `instancePath` (a flow-builder node
 * or edge, say), so a detail names the item as well as its index; undefined when it has none.
 */
function itemIdOnPath(value: unknown, instancePath: string): string | number | undefined {
  let found: string | number | undefined;
  let current = value;
  for (const raw of instancePath.split('/').slice(1)) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, token)) break;
    const isItem = Array.isArray(current);
    current = (current as Record<string, unknown>)[token];
    if (isItem && typeof current === 'object' && current !== null && Object.hasOwn(current, 'id')) {
      const id = (current as { id: unknown }).id;
      if (typeof id === 'string' || typeof id === 'number') found = id;
    }
  }
  return found;
}

/**
 * ajv reports every branch of a failed union (`anyOf`). Where one branch is plainly the one meant
 * (no branch error says the value is of another type or names another literal: the `provider`
 * the request gave), only its errors are kept, fewest first among such: a Clio CRM without its
 * access_token is told that, not also that "none" was the other provider or that a null would do.
 * A union none of whose branches fits that way (a union of literals) keeps every error. Inner
 * unions first, so that a branch made of a union counts with what is left of it.
 */
function pruneUnionBranches(errors: ErrorObject[]): ErrorObject[] {
  let kept = errors;
  const unions = errors
    .filter((e) => e.keyword === 'anyOf')
    .sort((a, b) => b.schemaPath.length - a.schemaPath.length);
  for (const union of unions) {
    if (!kept.includes(union)) continue;
    const prefix = `${union.schemaPath}/`;
    const branches = new Map<string, ErrorObject[]>();
    for (const e of kept) {
      if (!e.schemaPath.startsWith(prefix)) continue;
      const branch = e.schemaPath.slice(prefix.length).split('/')[0]!;
      branches.set(branch, [...(branches.get(branch) ?? []), e]);
    }
    const meant = [...branches.values()]
      .filter((list) =>
        list.every(
          (e) =>
            e.keyword !== 'const' &&
            e.keyword !== 'enum' &&
            !(e.keyword === 'type' && e.instancePath === union.instancePath),
        ),
      )
      .sort((a, b) => a.length - b.length)[0];
    if (meant === undefined) continue;
    kept = kept.filter((e) => e !== union && (!e.schemaPath.startsWith(prefix) || meant.includes(e)));
  }
  return kept;
}

function toDetails(all: ErrorObject[], where: string, value: unknown): ErrorDetail[] {
  const errors = pruneUnionBranches(all);
  const seen = new Set<string>();
  const details: ErrorDetail[] = [];
  const choices = allowedChoices(errors);
  // Union branches repeat each other; keep the first message per path.
  for (const e of errors) {
    // An if/then schema's own error only says "must match then"; the errors inside it say what.
    if (e.keyword === 'if') continue;
    let path = e.instancePath;
    let message = e.message ?? 'is invalid';
    const allowed = choices.get(e.instancePath);
    if (allowed !== undefined && (e.keyword === 'const' || e.keyword === 'enum' || e.keyword === 'anyOf')) {
      // A union of literals ("left" | "right") says which values it takes, not "must be equal to constant".
      message = `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
    } else if (e.keyword === 'additionalProperties') {
      path += `/${pointerToken(String(e.params.additionalProperty))}`;
      message = 'is not an allowed field';
    } else if (e.keyword === 'required') {
      path += `/${pointerToken(String(e.params.missingProperty))}`;
      message = 'is required';
    } else if (e.keyword === 'pattern') {
      message = `does not have the expected format (${String(e.params.pattern)})`;
    }
    const itemId = where === 'body' ? itemIdOnPath(value, e.instancePath) : undefined;
    if (itemId !== undefined) message += ` (the item with id ${quote(itemId)})`;
    const pointer = path === '' ? (where === 'body' ? '' : `/${where}`) : path;
    const key = `${pointer}`;
    if (seen.has(key)) continue;
    seen.add(key);
    // A pointer is made of request keys: clipped like any echoed request value.
    details.push({ path: pointer === '' ? '/' : clip(pointer), message });
  }
  return details;
}

/**
 * The values a path's literals allow, for a path whose every error is a literal's (`const`, `enum`)
 * or the union of them (`anyOf`): a union with another kind of branch keeps its own messages.
 */
function allowedChoices(errors: ErrorObject[]): Map<string, unknown[]> {
  const byPath = new Map<string, unknown[] | null>();
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    const known = byPath.get(e.instancePath);
    if (known === null) continue;
    const values = known ?? [];
    if (e.keyword === 'const') values.push(e.params.allowedValue);
    else if (e.keyword === 'enum') values.push(...(e.params.allowedValues as unknown[]));
    else if (e.keyword !== 'anyOf') {
      byPath.set(e.instancePath, null);
      continue;
    }
    byPath.set(e.instancePath, values);
  }
  const choices = new Map<string, unknown[]>();
  for (const [path, values] of byPath) {
    if (values !== null && values.length > 0) choices.set(path, [...new Set(values)]);
  }
  return choices;
}
