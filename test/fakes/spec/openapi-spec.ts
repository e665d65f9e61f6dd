// A provider's published API document (test/fakes/spec/<name>.json, derived by
// `npm run providers:derive`) as the judge of what our clients send and what our fakes answer.
// A fake asks `checkRequest` about every request and refuses, as the provider does, the ones
// with problems; it asks `checkResponse` about every answer it builds and records the problems
// in its `SpecViolations`, whose `assertNone()` (called by the fake's close()) fails the test.
//
// Requests are judged as the document says: the operation must exist; query and path parameters
// are known, required ones present and each value (coerced from its text) valid against its
// schema; required headers present; a security scheme's credentials present; the JSON body valid
// against the requestBody schema. Responses are judged closed: an object may hold only the
// properties its schema names (allOf branches together), so a fake cannot answer a field the
// provider does not have.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv2019, type ErrorObject, type ValidateFunction } from 'ajv/dist/2019.js';
import addFormatsModule from 'ajv-formats';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export type SpecName = 'clio-v4' | 'calcom-v2' | 'retell' | 'ringcentral';

export interface SpecRequest {
  method: string;
  /** The request's path, with the server's base path (e.g. /api/v4/contacts.json) or without. */
  path: string;
  query?: URLSearchParams;
  /** Lower-case header names, as node:http gives them. */
  headers?: Record<string, string | string[] | undefined>;
  /** The parsed JSON body; undefined when there is none. */
  body?: unknown;
}

export interface SpecMatch {
  method: string;
  /** The document's path template, e.g. /v2/bookings/{bookingUid}. */
  template: string;
  params: Record<string, string>;
  operationId: string | undefined;
  /** JSON pointer of the operation in the document. */
  pointer: string;
}

export interface RequestVerdict {
  match: SpecMatch | null;
  problems: string[];
}

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;
const SPEC_DIR = dirname(fileURLToPath(import.meta.url));
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const loaded = new Map<SpecName, OpenApiSpec>();

/** The derived document of that provider, loaded once per process. */
export function loadSpec(name: SpecName): OpenApiSpec {
  let spec = loaded.get(name);
  if (!spec) {
    const doc = JSON.parse(readFileSync(join(SPEC_DIR, `${name}.json`), 'utf8')) as JsonObject;
    spec = new OpenApiSpec(name, doc);
    loaded.set(name, spec);
  }
  return spec;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

function formatErrors(errors: ErrorObject[] | null | undefined, where: string): string[] {
  return (errors ?? []).map((error) => {
    const at = `${where}${error.instancePath}`;
    const params = error.params as Record<string, unknown>;
    if (error.keyword === 'enum') return `${at} must be one of ${JSON.stringify(params.allowedValues)}`;
    if (error.keyword === 'unevaluatedProperties' || error.keyword === 'additionalProperties') {
      return `${at} has a property the document does not have: "${String(params.unevaluatedProperty ?? params.additionalProperty)}"`;
    }
    return `${at} ${error.message ?? error.keyword}`;
  });
}

/** Every format the document names that ajv-formats does not know is accepted as text. */
function documentFormats(doc: Json, into = new Set<string>()): Set<string> {
  if (Array.isArray(doc)) doc.forEach((item) => documentFormats(item, into));
  else if (doc && typeof doc === 'object') {
    for (const [key, value] of Object.entries(doc)) {
      if (key === 'format' && typeof value === 'string') into.add(value);
      else documentFormats(value, into);
    }
  }
  return into;
}

/**
 * The document with every object schema closed at its place of use: an inline object schema or a
 * $ref that is not itself a branch of allOf/anyOf/oneOf gets `unevaluatedProperties: false`,
 * which sees through $ref and allOf, so a composed schema is closed over all its branches. The
 * definitions under components/schemas stay open (they are closed where they are used), or a
 * definition used as an allOf branch would refuse the other branches' properties.
 */
type Place = 'schema' | 'branch' | 'definition' | 'names' | 'definitions';
const NAME_MAPS = ['properties', 'patternProperties', 'responses', 'content', 'paths'];

function closed(node: Json, place: Place = 'schema'): Json {
  if (Array.isArray(node)) return node.map((item) => closed(item));
  if (node === null || typeof node !== 'object') return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    if (place === 'names' || place === 'definitions') {
      out[key] = closed(value, place === 'definitions' ? 'definition' : 'schema');
    } else if (Array.isArray(value) && ['allOf', 'anyOf', 'oneOf'].includes(key)) {
      out[key] = value.map((item) => closed(item, 'branch'));
    } else {
      out[key] = closed(
        value,
        key === 'schemas' ? 'definitions' : NAME_MAPS.includes(key) ? 'names' : 'schema',
      );
    }
  }
  if (place !== 'schema') return out;
  // An object schema that names no properties (`{type: "object"}`, swagger's `type: Object`) is a
  // free-form map, as JSON Schema reads it: only a schema that names its properties is closed. A
  // oneOf/anyOf is closed over the branch that matched (unevaluatedProperties sees into it).
  const objectLike =
    node.properties !== undefined ||
    node.allOf !== undefined ||
    node.oneOf !== undefined ||
    node.anyOf !== undefined ||
    typeof node.$ref === 'string';
  if (objectLike && node.additionalProperties === undefined) out.unevaluatedProperties = false;
  return out;
}

/**
 * The document with `oneOf` read as `anyOf`, for judging requests: generated documents (NestJS
 * swagger, Cal.com's) list input classes that extend one another under `oneOf` (a plain booking
 * body is also a valid recurring one), and the server takes a body that fits any of them.
 */
function oneOfAsAnyOf(node: Json): Json {
  if (Array.isArray(node)) return node.map(oneOfAsAnyOf);
  if (node === null || typeof node !== 'object') return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    out[key === 'oneOf' ? 'anyOf' : key] = oneOfAsAnyOf(value);
  }
  return out;
}

export class OpenApiSpec {
  private readonly open: Ajv2019;
  private readonly strict: Ajv2019;
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly routes: Array<{
    method: string;
    template: string;
    regex: RegExp;
    names: string[];
    literal: number;
  }> = [];
  readonly basePath: string;

  constructor(
    readonly name: SpecName,
    readonly doc: JsonObject,
  ) {
    const formats = documentFormats(doc);
    const make = (schema: JsonObject): Ajv2019 => {
      const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: true });
      addFormats(ajv);
      for (const format of formats) if (!ajv.formats[format]) ajv.addFormat(format, true);
      ajv.addSchema(schema, 'spec');
      return ajv;
    };
    this.open = make(oneOfAsAnyOf(doc) as JsonObject);
    this.strict = make(closed(doc) as JsonObject);
    const servers = (doc.servers ?? []) as JsonObject[];
    const first = servers[0]?.url;
    this.basePath = typeof first === 'string' ? new URL(first, 'http://x').pathname.replace(/\/$/, '') : '';
    for (const [template, item] of Object.entries(doc.paths as JsonObject)) {
      const names: string[] = [];
      const pattern = template
        .split(/(\{[^}]+\})/)
        .map((part) => {
          const param = /^\{([^}]+)\}$/.exec(part);
          if (param) {
            names.push(param[1]!);
            return '([^/]+)';
          }
          return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        })
        .join('');
      for (const method of Object.keys(item as JsonObject)) {
        if (!METHODS.includes(method)) continue;
        const literal = template.replace(/\{[^}]+\}/g, '').length;
        this.routes.push({ method, template, regex: new RegExp(`^${pattern}$`), names, literal });
      }
    }
    // The most literal template wins (/v2/bookings/search before /v2/bookings/{uid}).
    this.routes.sort((a, b) => b.literal - a.literal);
  }

  /** The operation a request names, or null when the document has none for it. */
  match(method: string, path: string): SpecMatch | null {
    const lower = method.toLowerCase();
    const local =
      this.basePath && path.startsWith(`${this.basePath}/`) ? path.slice(this.basePath.length) : path;
    for (const route of this.routes) {
      if (route.method !== lower) continue;
      const found = route.regex.exec(local);
      if (!found) continue;
      const params: Record<string, string> = {};
      route.names.forEach((name, index) => (params[name] = decodeURIComponent(found[index + 1]!)));
      const pointer = `#/paths/${escapePointer(route.template)}/${lower}`;
      const operation = this.at(pointer) as JsonObject;
      const operationId = typeof operation.operationId === 'string' ? operation.operationId : undefined;
      return { method: lower, template: route.template, params, operationId, pointer };
    }
    return null;
  }

  checkRequest(request: SpecRequest): RequestVerdict {
    const match = this.match(request.method, request.path);
    if (!match) {
      return {
        match,
        problems: [`${request.method.toUpperCase()} ${request.path}: no such operation in ${this.name}`],
      };
    }
    const problems: string[] = [];
    const operation = this.at(match.pointer) as JsonObject;
    const headers = request.headers ?? {};
    const query = request.query ?? new URLSearchParams();
    const parameters = this.parameters(match);
    for (const name of new Set(query.keys())) {
      if (!parameters.some((p) => p.in === 'query' && p.name === name))
        problems.push(`query parameter "${name}" is not in the document`);
    }
    for (const parameter of parameters) {
      const where = `${parameter.in} parameter "${parameter.name}"`;
      let values: string[];
      if (parameter.in === 'query') values = query.getAll(parameter.name);
      else if (parameter.in === 'path') values = [match.params[parameter.name] ?? ''];
      else if (parameter.in === 'header') {
        const value = headers[parameter.name.toLowerCase()];
        values = value === undefined ? [] : Array.isArray(value) ? value : [value];
      } else continue;
      if (values.length === 0) {
        if (parameter.required) problems.push(`${where} is required`);
        continue;
      }
      const validate = this.validator(this.open, `${parameter.pointer}/schema`);
      const value = this.coerce(`${parameter.pointer}/schema`, values);
      if (!validate(value)) problems.push(...formatErrors(validate.errors, where));
    }
    problems.push(...this.credentialProblems(operation, headers));
    const requestBody = operation.requestBody as JsonObject | undefined;
    if (requestBody) {
      const content = (this.deref(requestBody) as JsonObject).content as JsonObject;
      const mediaType = Object.keys(content).find((type) => type.startsWith('application/json'));
      if (request.body === undefined && (this.deref(requestBody) as JsonObject).required) {
        problems.push('the request body is required');
      } else if (mediaType) {
        // No body where the document does not require one is read as an empty object, as servers do.
        const contentType = String(headers['content-type'] ?? '');
        if (request.body !== undefined && !contentType.startsWith('application/json')) {
          problems.push(`content-type "${contentType}" is not application/json`);
        }
        const validate = this.validator(
          this.open,
          `${match.pointer}/requestBody/content/${escapePointer(mediaType)}/schema`,
        );
        if (!validate(request.body ?? {})) problems.push(...formatErrors(validate.errors, 'body'));
      }
    } else if (request.body !== undefined) {
      problems.push('this operation takes no request body');
    }
    return { match, problems };
  }

  /** Problems of a response the fake is about to send: an undocumented status or a body off its schema. */
  checkResponse(match: SpecMatch, status: number, body: unknown): string[] {
    const responses = (this.at(match.pointer) as JsonObject).responses as JsonObject;
    const key = String(status) in responses ? String(status) : 'default' in responses ? 'default' : null;
    const where = `${match.method.toUpperCase()} ${match.template} ${status}`;
    if (!key) return [`${where}: the document has no such response`];
    const content = (this.deref(responses[key]!) as JsonObject).content as JsonObject | undefined;
    const mediaType = content && Object.keys(content).find((type) => type.startsWith('application/json'));
    if (!mediaType) return [];
    const validate = this.validator(
      this.strict,
      `${match.pointer}/responses/${escapePointer(key)}/content/${escapePointer(mediaType)}/schema`,
    );
    return validate(body) ? [] : formatErrors(validate.errors, `${where} body`);
  }

  /**
   * Problems of a form-encoded request body (application/x-www-form-urlencoded, as OAuth token
   * endpoints take): every field named by the form's schema, each value (coerced from its text)
   * valid against its property's schema, the required ones present.
   */
  checkForm(match: SpecMatch, form: URLSearchParams): string[] {
    const requestBody = (this.at(match.pointer) as JsonObject).requestBody as JsonObject | undefined;
    const content = requestBody && ((this.deref(requestBody) as JsonObject).content as JsonObject);
    const mediaType = 'application/x-www-form-urlencoded';
    if (!content || !(mediaType in content)) return [`${match.template}: the document takes no form body`];
    const schemaPointer = `${match.pointer}/requestBody/content/${escapePointer(mediaType)}/schema`;
    const schema = this.at(schemaPointer) as JsonObject;
    const properties = (schema.properties ?? {}) as JsonObject;
    const problems: string[] = [];
    for (const name of new Set(form.keys())) {
      if (!(name in properties)) {
        problems.push(`form field "${name}" is not in the document`);
        continue;
      }
      const pointer = `${schemaPointer}/properties/${escapePointer(name)}`;
      const validate = this.validator(this.open, pointer);
      if (!validate(this.coerce(pointer, form.getAll(name))))
        problems.push(...formatErrors(validate.errors, `form field "${name}"`));
    }
    for (const name of (schema.required ?? []) as string[]) {
      if (!form.has(name)) problems.push(`form field "${name}" is required`);
    }
    return problems;
  }

  /**
   * Problems of a body judged against one of the document's named schemas
   * (`components/schemas/<name>`), closed as responses are: for bodies that are no operation's
   * request or response, such as the webhook events a provider sends.
   */
  checkSchema(name: string, body: unknown): string[] {
    const pointer = `#/components/schemas/${escapePointer(name)}`;
    if (this.at(pointer) === null) return [`${name}: no such schema in ${this.name}`];
    const validate = this.validator(this.strict, pointer);
    return validate(body) ? [] : formatErrors(validate.errors, name);
  }

  /** The node at a JSON pointer of the document (`#/…`), following a $ref at the end. */
  at(pointer: string): Json {
    let node: Json = this.doc;
    for (const raw of pointer.slice(2).split('/')) {
      const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
      if (node === null || typeof node !== 'object') throw new Error(`${pointer}: not in ${this.name}`);
      node = (Array.isArray(node) ? node[Number(key)] : node[key]) ?? null;
    }
    return this.deref(node);
  }

  /** A schema with its $ref chain followed. */
  deref(node: Json): Json {
    let current = node;
    while (
      current &&
      typeof current === 'object' &&
      !Array.isArray(current) &&
      typeof current.$ref === 'string'
    ) {
      current = this.at(current.$ref);
    }
    return current;
  }

  private parameters(
    match: SpecMatch,
  ): Array<{ name: string; in: string; required: boolean; pointer: string }> {
    const found = new Map<string, { name: string; in: string; required: boolean; pointer: string }>();
    const itemPointer = match.pointer.slice(0, match.pointer.lastIndexOf('/'));
    for (const owner of [itemPointer, match.pointer]) {
      const list = ((this.at(owner) as JsonObject).parameters ?? []) as Json[];
      list.forEach((entry, index) => {
        let pointer = `${owner}/parameters/${index}`;
        let parameter = entry as JsonObject;
        if (typeof parameter.$ref === 'string') {
          pointer = parameter.$ref;
          parameter = this.at(pointer) as JsonObject;
        }
        const name = String(parameter.name);
        const place = String(parameter.in);
        found.set(`${place}:${name}`, { name, in: place, required: parameter.required === true, pointer });
      });
    }
    return [...found.values()];
  }

  private credentialProblems(operation: JsonObject, headers: SpecRequest['headers'] & object): string[] {
    const requirements = (operation.security ?? this.doc.security) as JsonObject[] | undefined;
    if (!requirements || requirements.length === 0) return [];
    const schemes = ((this.doc.components as JsonObject | undefined)?.securitySchemes ?? {}) as JsonObject;
    const satisfied = requirements.some((requirement) =>
      Object.keys(requirement).every((schemeName) => {
        const scheme = this.deref(schemes[schemeName] ?? null) as JsonObject | null;
        if (!scheme) return true;
        if (scheme.type === 'http') {
          const value = String(headers['authorization'] ?? '');
          return new RegExp(`^${String(scheme.scheme)}\\s+\\S`, 'i').test(value);
        }
        if (scheme.type === 'apiKey' && scheme.in === 'header')
          return headers[String(scheme.name).toLowerCase()] !== undefined;
        return true;
      }),
    );
    return satisfied ? [] : ['the credentials the document requires (security) are missing'];
  }

  /** A parameter's text coerced to the type its schema names (form style: repeated or comma-separated). */
  private coerce(schemaPointer: string, values: string[]): unknown {
    const schema = this.at(schemaPointer) as JsonObject;
    const scalar = (text: string, type: Json | undefined): unknown => {
      if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(text)) return Number(text);
      if (type === 'boolean' && (text === 'true' || text === 'false')) return text === 'true';
      return text;
    };
    if (schema.type === 'array') {
      const items = this.deref(schema.items ?? {}) as JsonObject;
      const parts = values.length === 1 ? values[0]!.split(',') : values;
      return parts.map((part) => scalar(part, items.type));
    }
    return scalar(values[values.length - 1]!, schema.type);
  }

  private validator(ajv: Ajv2019, pointer: string): ValidateFunction {
    const key = `${ajv === this.strict ? 'strict' : 'open'}:${pointer}`;
    const known = this.validators.get(key);
    if (known) return known;
    const validate = ajv.compile({ $ref: `spec${pointer}` });
    this.validators.set(key, validate);
    return validate;
  }
}

/**
 * What a fake answered that its provider's document does not allow. The fake records here and
 * its close() calls assertNone(), so a test whose fake answered off the document fails.
 */
export class SpecViolations {
  readonly list: string[] = [];

  record(problems: string[]): void {
    this.list.push(...problems);
  }

  assertNone(): void {
    if (this.list.length > 0) {
      throw new Error(
        `the fake answered off its provider's document:\n- ${this.list.slice(0, 20).join('\n- ')}`,
      );
    }
  }
}
