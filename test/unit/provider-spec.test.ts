import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { derive, stripProse } from '../../scripts/providers/derive.js';
import { PROVIDER_TARGETS } from '../../scripts/providers/targets.js';
import { loadSpec, OpenApiSpec, SpecViolations } from '../fakes/spec/openapi-spec.js';

// The provider documents our fakes are judged by (test/fakes/spec/*.json) and the checker that
// judges them: a request off the document is refused, a response off it is recorded.

const clio = loadSpec('clio-v4');
const json = { 'content-type': 'application/json', authorization: 'Bearer t' };

describe('deriving a provider document', () => {
  it('drops prose but keeps a property that is called "description"', () => {
    const schema = {
      description: 'A matter',
      example: { status: 'open' },
      properties: { description: { type: 'string', description: 'the text' }, example: { type: 'string' } },
    };
    expect(stripProse(schema)).toEqual({
      properties: { description: { type: 'string' }, example: { type: 'string' } },
    });
  });

  it('keeps only the operations we call and the schemas they reference, and is idempotent', () => {
    const target = PROVIDER_TARGETS.find((t) => t.name === 'clio-v4')!;
    const committed = JSON.parse(
      readFileSync(new URL('../fakes/spec/clio-v4.json', import.meta.url), 'utf8'),
    );
    expect(Object.keys(committed.paths).sort()).toEqual(
      [...new Set(target.operations.map(([, path]) => path))].sort(),
    );
    expect(committed['x-derived-from'].sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(derive(target, committed, committed['x-derived-from'])).toEqual(committed);
  });
});

describe('a request judged by the document', () => {
  it('passes a request the document allows', () => {
    const verdict = clio.checkRequest({
      method: 'GET',
      path: '/api/v4/contacts.json',
      query: new URLSearchParams({ limit: '200', fields: 'id,name', updated_since: '2026-11-01T00:00:00Z' }),
      headers: json,
    });
    expect(verdict.problems).toEqual([]);
    expect(verdict.match?.operationId).toBe('Contact#index');
  });

  it('refuses an unknown operation, an unknown parameter and a value off its schema', () => {
    expect(clio.checkRequest({ method: 'DELETE', path: '/api/v4/contacts.json' }).match).toBeNull();
    const verdict = clio.checkRequest({
      method: 'GET',
      path: '/api/v4/contacts.json',
      query: new URLSearchParams({ limit: 'many', page: '2', updated_since: 'yesterday' }),
      headers: json,
    });
    expect(verdict.problems).toEqual([
      'query parameter "page" is not in the document',
      'query parameter "limit" must be integer',
      'query parameter "updated_since" must match format "date-time"',
    ]);
  });

  it('refuses a body off its schema: a wrong enum case, a missing required field, no body at all', () => {
    const matter = (status: string) =>
      clio.checkRequest({
        method: 'POST',
        path: '/api/v4/matters.json',
        headers: json,
        body: { data: { client: { id: 7 }, description: 'Intake', status } },
      }).problems;
    expect(matter('pending')).toEqual([]);
    expect(matter('Pending')).toEqual(['body/data/status must be one of ["open","closed","pending"]']);
    expect(
      clio.checkRequest({ method: 'POST', path: '/api/v4/matters.json', headers: json, body: {} }).problems,
    ).toEqual(["body must have required property 'data'"]);
    expect(
      clio.checkRequest({ method: 'POST', path: '/api/v4/matters.json', headers: json }).problems,
    ).toEqual(["body must have required property 'data'"]);
  });

  it('refuses a body sent as something other than JSON', () => {
    const verdict = clio.checkRequest({
      method: 'POST',
      path: '/api/v4/matters.json',
      headers: { 'content-type': 'text/plain' },
      body: { data: { client: { id: 7 }, description: 'Intake' } },
    });
    expect(verdict.problems).toEqual(['content-type "text/plain" is not application/json']);
  });

  it('requires the credentials of a security scheme, and required headers', () => {
    const spec = new OpenApiSpec('retell', {
      openapi: '3.0.0',
      info: { title: 't', version: '1' },
      paths: {
        '/v2/things/{id}': {
          get: {
            security: [{ bearer: [] }],
            parameters: [
              { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
              {
                name: 'api-version',
                in: 'header',
                required: true,
                schema: { type: 'string', enum: ['2024-09-04'] },
              },
            ],
            responses: { '200': { description: 'ok' } },
          },
          post: {
            requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
            responses: { '201': { description: 'made' } },
          },
        },
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    });
    expect(spec.checkRequest({ method: 'GET', path: '/v2/things/x', headers: {} }).problems).toEqual([
      'path parameter "id" must be integer',
      'header parameter "api-version" is required',
      'the credentials the document requires (security) are missing',
    ]);
    const good = spec.checkRequest({
      method: 'GET',
      path: '/v2/things/12',
      headers: { authorization: 'Bearer k', 'api-version': '2024-09-04' },
    });
    expect(good).toMatchObject({
      problems: [],
      match: { template: '/v2/things/{id}', params: { id: '12' } },
    });
    expect(spec.checkRequest({ method: 'POST', path: '/v2/things/12', headers: {} }).problems).toEqual([
      'the request body is required',
    ]);
  });
});

describe('a response judged by the document', () => {
  const list = clio.match('GET', '/api/v4/contacts.json')!;

  it('accepts what the document describes', () => {
    const body = { data: [{ id: 1, etag: '"1"', email_addresses: [{ address: 'a@b.co', primary: true }] }] };
    expect(clio.checkResponse(list, 200, body)).toEqual([]);
  });

  it('refuses a field the document does not have, nested ones too, and an undocumented status', () => {
    const body = { data: [{ id: 1, email_addresses: [{ address: 'a@b.co', default_email: true }] }] };
    expect(clio.checkResponse(list, 200, body)).toEqual([
      'GET /contacts.json 200 body/data/0/email_addresses/0 has a property the document does not have: "default_email"',
    ]);
    expect(clio.checkResponse(list, 418, {})).toEqual([
      'GET /contacts.json 418: the document has no such response',
    ]);
  });

  it('fails the test that owns a fake which answered off the document', () => {
    const violations = new SpecViolations();
    violations.assertNone();
    violations.record(['GET /contacts.json 200 body has a property the document does not have: "x"']);
    expect(() => violations.assertNone()).toThrow(/answered off its provider's document/);
  });
});
