import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { expect } from 'vitest';
import { isTimeZone } from '../../core/platform/time-zone.js';
import type { ApiClient, ApiResponse } from './client.js';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;

interface OpenApiDocument {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>
  >;
}

/** The schema with every object closed: a property it does not name is an error. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (schema === null || typeof schema !== 'object') return schema;
  const out = Object.fromEntries(
    Object.entries(schema).map(([k, v]) => [k, k === 'properties' ? mapValues(v, closed) : closed(v)]),
  );
  if (out.properties !== undefined && out.additionalProperties === undefined)
    out.additionalProperties = false;
  return out;
}
const mapValues = (o: Record<string, unknown>, f: (v: unknown) => unknown) =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));

/**
 * Checks answers against the schema /openapi.json declares for them: what a client generated
 * from the document expects. The validator has no defaults and no coercion: it only reads.
 * `closed`: a field the document does not name is an error too (the fuzzer's conformance).
 */
export async function documentedResponses(api: ApiClient, options: { closed?: boolean } = {}) {
  const doc = (await api.get('/openapi.json')).body as OpenApiDocument;
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv, ['email', 'uri', 'date-time', 'uuid']);
  ajv.addFormat('iana-time-zone', { type: 'string', validate: isTimeZone });
  const compiled = new Map<string, ValidateFunction>();

  /** Expects `res` to be a success whose body the document's schema for it accepts. */
  return function expectDocumented(res: ApiResponse, method: string, path: string): void {
    expect(res.status, res.text).toBeLessThan(300);
    const key = `${method} ${path} ${res.status}`;
    let validate = compiled.get(key);
    if (validate === undefined) {
      const schema =
        doc.paths[path]?.[method.toLowerCase()]?.responses[String(res.status)]?.content?.['application/json']
          ?.schema;
      if (schema === undefined) throw new Error(`/openapi.json declares no JSON answer for ${key}`);
      validate = ajv.compile(options.closed === true ? (closed(schema) as object) : schema);
      compiled.set(key, validate);
    }
    validate(res.body);
    expect(validate.errors ?? [], `${key}: ${res.text}`).toEqual([]);
  };
}
