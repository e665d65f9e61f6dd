import type { TSchema } from '@sinclair/typebox';
import type { AnyRoute } from './route.js';
import { ErrorBody } from './schemas/common.js';

// The OpenAPI 3.1 document, generated from the same route list and schemas that validate requests.

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid request (details name each bad field by JSON pointer)',
  401: 'Missing, invalid, expired or revoked token',
  403: 'The token may not act on this firm or route',
  404: 'Not found (or belongs to another firm)',
  409: 'Conflict with the current state',
  413: 'Body too large',
  415: 'Body is not JSON',
  429: 'Rate limited (see Retry-After)',
  431: 'Request line and headers over 16 KiB (a query string that long)',
  503: 'Redis or MongoDB unavailable (see Retry-After)',
};

/** JSON Schema without TypeBox's symbol keys. */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
}

function parameters(schema: TSchema | undefined, location: 'path' | 'query') {
  if (schema === undefined) return [];
  const s = plain(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(s.properties ?? {}).map(([name, propSchema]) => ({
    name,
    in: location,
    required: location === 'path' || (s.required ?? []).includes(name),
    schema: propSchema,
  }));
}

export function buildOpenApiDocument(routes: AnyRoute[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const statuses = new Set<number>([400, 503, ...(route.errors ?? [])]);
    if (route.auth.kind !== 'none') statuses.add(401);
    if (route.auth.kind === 'token' || route.auth.kind === 'platform' || route.addressLimited === true) {
      statuses.add(429);
    }
    if (route.auth.kind === 'platform') statuses.add(403);
    if (route.body !== undefined) [413, 415].forEach((s) => statuses.add(s));
    // Node refuses a request line and headers over 16 KiB before any route runs: a long query.
    if (route.query !== undefined) statuses.add(431);
    const responses: Record<string, unknown> = {
      '200': {
        description: 'Success',
        ...(route.responseHeaders === undefined
          ? {}
          : {
              headers: Object.fromEntries(
                Object.entries(route.responseHeaders).map(([name, h]) => [
                  name,
                  { description: h.description, schema: plain(h.schema) },
                ]),
              ),
            }),
        content: Object.fromEntries(
          [route.responseContentType ?? 'application/json']
            .flat()
            .map((type) => [type, { schema: route.response === undefined ? {} : plain(route.response) }]),
        ),
      },
    };
    if (route.accepted !== undefined) {
      responses['202'] = {
        description: 'Accepted: still processing (poll the job)',
        content: { 'application/json': { schema: plain(route.accepted) } },
      };
    }
    for (const status of [...statuses].sort()) {
      responses[String(status)] = {
        description: ERROR_TEXT[status] ?? 'Error',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
    }
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      parameters: [
        ...parameters(route.params, 'path'),
        ...parameters(route.query, 'query'),
        ...Object.entries(route.requestHeaders ?? {}).map(([name, h]) => ({
          name,
          in: 'header',
          required: false,
          description: h.description,
          schema: plain(h.schema),
        })),
      ],
      responses,
      security: route.auth.kind === 'none' ? [] : [{ bearer: [] }],
    };
    if (route.body !== undefined) {
      const schema = plain(route.body);
      operation.requestBody = {
        // A body whose fields are all optional may be left out: it reads as {}.
        required: Array.isArray(schema.required) && schema.required.length > 0,
        content: { 'application/json': { schema } },
      };
    }
    (paths[route.path] ??= {})[route.method.toLowerCase()] = operation;
  }
  const errorSchema = plain(ErrorBody);
  delete errorSchema.$id;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Intake Service API',
      version: '2.0.0',
      description:
        'Voice and chat intake back end: AI voice and chat agents, outbound calls and campaigns, contacts, ' +
        'workflows and webhook receivers. Every success is 200; errors have the shape of components.schemas.Error.',
    },
    servers: [{ url: serverUrl }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'The platform key, a firm API key, or a session JWT (HS256)',
        },
      },
      schemas: { Error: errorSchema },
    },
  };
}
