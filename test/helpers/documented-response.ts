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

/**
 * Checks answers against the schema /openapi.json declares for them: what a client generated
 * from the document expects. The validator has no defaults and no coercion: it only reads.
 */
export async function documentedResponses(api: ApiClient) {
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
      validate = ajv.compile(schema);
      compiled.set(key, validate);
    }
    validate(res.body);
    expect(validate.errors ?? [], `${key}: ${res.text}`).toEqual([]);
  };
}
