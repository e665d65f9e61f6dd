// Clio's `fields=` parameter (docs.developers.clio.com/api-docs/fields), judged against the
// response schema of the operation in Clio's v4 document (test/fakes/spec/clio-v4.json):
// a comma list of names; a nested resource's names in braces (`email_addresses{address,primary}`);
// a nested resource without braces answers its default fields (id, etag); names inside a
// second-level nested resource are a 400; any name the resource does not have is a 400.
// Without `fields=` a record answers only its defaults, `id` and `etag`.
import type { OpenApiSpec } from '../spec/openapi-spec.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export interface FieldNode {
  name: string;
  /** The names asked inside braces; null when the name came without braces. */
  nested: FieldNode[] | null;
}

/** Parses `a,b{c,d},e`; throws on a syntax error. */
export function parseFields(text: string): FieldNode[] {
  let at = 0;
  const list = (depth: number): FieldNode[] => {
    const out: FieldNode[] = [];
    for (;;) {
      const name = /^[A-Za-z0-9_[\]]+/.exec(text.slice(at))?.[0];
      if (name === undefined) throw new Error(`a field name was expected at character ${at + 1}`);
      at += name.length;
      let nested: FieldNode[] | null = null;
      if (text[at] === '{') {
        at++;
        nested = list(depth + 1);
        if (text[at] !== '}') throw new Error(`"}" was expected at character ${at + 1}`);
        at++;
      }
      out.push({ name, nested });
      if (text[at] !== ',') break;
      at++;
    }
    if (depth === 0 && at !== text.length) throw new Error(`unexpected "${text[at]}" at character ${at + 1}`);
    return out;
  };
  return list(0);
}

/** The properties of an object schema, through $ref and allOf. */
export function propertiesOf(spec: OpenApiSpec, schema: Json): Record<string, Json> {
  const node = spec.deref(schema) as JsonObject | null;
  if (node === null || typeof node !== 'object') return {};
  const out: Record<string, Json> = {};
  for (const branch of (node.allOf ?? []) as Json[]) Object.assign(out, propertiesOf(spec, branch));
  Object.assign(out, (node.properties ?? {}) as JsonObject);
  return out;
}

/** The record schema of a nested resource property (an object, or an array of objects); else null. */
export function resourceOf(spec: OpenApiSpec, property: Json): Json | null {
  let node = spec.deref(property) as JsonObject | null;
  if (node !== null && node.type === 'array') node = spec.deref(node.items ?? null) as JsonObject | null;
  if (node === null || typeof node !== 'object') return null;
  return node.properties !== undefined || node.allOf !== undefined ? node : null;
}

/** The problems of the asked fields against the record schema (empty: every name is Clio's). */
export function fieldProblems(spec: OpenApiSpec, record: Json, fields: FieldNode[], depth = 0): string[] {
  const properties = propertiesOf(spec, record);
  const problems: string[] = [];
  for (const field of fields) {
    const property = properties[field.name];
    if (property === undefined) {
      problems.push(`${field.name}${field.nested === null ? '' : '{…}'} is not a field of this resource`);
      continue;
    }
    if (field.nested === null) continue;
    const nested = resourceOf(spec, property);
    if (nested === null) problems.push(`${field.name} is not a nested resource; it takes no {fields}`);
    else if (depth >= 1)
      problems.push(`${field.name}{…}: fields of a second-level nested resource cannot be asked`);
    else
      problems.push(
        ...fieldProblems(spec, nested, field.nested, depth + 1).map((p) => `${field.name}{${p}}`),
      );
  }
  return problems;
}

/** Drops the absent: Clio's document has no nullable fields, so an unset one is left out. */
const present = (entries: Array<[string, unknown]>) =>
  Object.fromEntries(entries.filter(([, v]) => v !== undefined && v !== null));

/**
 * A stored record as Clio answers it: `id` and `etag` without fields; with them, each asked
 * name (a nested resource's items by their own asked names, or their id and etag).
 */
export function project(
  record: Record<string, unknown>,
  fields: FieldNode[] | null,
): Record<string, unknown> {
  if (fields === null)
    return present([
      ['id', record.id],
      ['etag', record.etag],
    ]);
  return present(
    fields.map((field): [string, unknown] => {
      const value = record[field.name];
      if (field.nested === null && !(typeof value === 'object' && value !== null)) return [field.name, value];
      const one = (item: unknown) => project(item as Record<string, unknown>, field.nested);
      return [field.name, Array.isArray(value) ? value.map(one) : value == null ? value : one(value)];
    }),
  );
}
