// The kinds of environment variable the configuration is made of. Each builder returns a TypeBox
// schema (so the Config type is Static<> of them and TypeBox checks their bounds) carrying, under
// the `variable` keyword, what the parser and the configuration table (docs/configuration.md)
// need: the name, the meaning, how to read the raw string, the default and what `npm start` /
// `npm test` do about it.
import { Type, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox';

/** A raw string read into its type, or refused; `got` is what a message may echo of it. */
export type Read = { ok: true; value: unknown } | { ok: false; got?: string };

/** What `npm start` (scripts/local/start.ts) and `npm test` (test/helpers/stack.ts) set. */
export interface LocalRuns {
  start?: string;
  test?: string;
}

/** A default computed from the environment or from variables declared before this one. */
export interface Fallback {
  /** For docs/configuration.md (Markdown). */
  text: string;
  value: (env: (name: string) => string | undefined, config: Record<string, unknown>) => unknown;
}

export interface Variable {
  name: string;
  /** The configuration table's "meaning" column (Markdown); also the message when a required one is missing. */
  description: string;
  /** What a valid value is, in words, e.g. "an integer from 0 to 65535" (messages and docs/configuration.md). */
  expects: string;
  read: (raw: string) => Read;
  /** Never echoed in a message: keys, secrets and URLs (which may carry a password). */
  secret: boolean;
  fallback?: Fallback;
  local?: LocalRuns;
  /** Unset is allowed unless the named variable has this value. */
  requiredWhen?: { name: string; equals: string };
  /** Unset is allowed only while the named variable is unset too (a pair given both or neither). */
  requiredWith?: string;
  /** Must not equal the named variable's value. */
  differsFrom?: string;
}

/** Options every kind takes. `default` is the typed value used when the variable is unset. */
interface Common<T> {
  description: string;
  default?: T;
  fallback?: Fallback;
  local?: LocalRuns;
  requiredWhen?: { name: string; equals: string };
  requiredWith?: string;
  differsFrom?: string;
}

const echo = (raw: string): string => raw.slice(0, 100);

function variable(
  name: string,
  options: Common<unknown>,
  expects: string,
  read: Variable['read'],
  secret = false,
) {
  const { description, fallback, local, requiredWhen, requiredWith, differsFrom } = options;
  const meta: Variable = {
    name,
    description,
    expects,
    read,
    secret,
    fallback,
    local,
    requiredWhen,
    requiredWith,
    differsFrom,
  };
  return {
    description,
    variable: meta,
    ...(options.default === undefined ? {} : { default: options.default }),
  };
}

/** The metadata a builder attached to a schema. */
export function variableOf(schema: TSchema): Variable {
  return (schema as TSchema & { variable: Variable }).variable;
}

/** The one boolean parser: these four spellings, nothing else (a typo must not silently mean false). */
const BOOLEAN_SPELLINGS = new Map([
  ['true', true],
  ['false', false],
  ['1', true],
  ['0', false],
]);

export function boolean(name: string, options: Common<boolean>) {
  const read = (raw: string): Read => {
    const value = BOOLEAN_SPELLINGS.get(raw);
    return value === undefined ? { ok: false, got: echo(raw) } : { ok: true, value };
  };
  return Type.Boolean(variable(name, options, 'true, false, 1 or 0', read));
}

export function integer(name: string, options: Common<number> & { min: number; max: number }) {
  const read = (raw: string): Read =>
    /^-?\d+$/.test(raw) ? { ok: true, value: Number(raw) } : { ok: false, got: echo(raw) };
  const expects = `an integer from ${options.min} to ${options.max}`;
  return Type.Integer({
    ...variable(name, options, expects, read),
    minimum: options.min,
    maximum: options.max,
  });
}

export function oneOf<const T extends string>(name: string, values: readonly T[], options: Common<T>) {
  const read = (raw: string): Read => ({ ok: true, value: raw });
  const schema = variable(name, options, `one of ${values.join(', ')}`, read);
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    schema,
  ) as TUnion<TLiteral<T>[]>;
}

/**
 * A URL with one of the given protocols, e.g. ['redis:', 'rediss:']. `base`: an API's base URL,
 * kept without trailing slashes so paths can be appended. Only its protocol is ever echoed: a URL
 * may carry a password.
 */
export function url(name: string, options: Common<string> & { protocols: string[]; base?: boolean }) {
  const expects = `a URL (${options.protocols.map((p) => `${p}//`).join(' or ')})`;
  const read = (raw: string): Read => {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      return { ok: false };
    }
    if (!options.protocols.includes(parsed.protocol)) return { ok: false, got: `${parsed.protocol}//…` };
    // WHATWG's URL takes `smtp://` or `redis://` with no host at all; the clients then go to
    // localhost. A URL the service is to reach names its server.
    if (parsed.hostname === '') return { ok: false, got: `${parsed.protocol}// with no host` };
    return { ok: true, value: options.base ? raw.replace(/\/+$/, '') : raw };
  };
  return Type.String(variable(name, options, expects, read, true));
}

/**
 * A MongoDB connection string's form: `mongodb://` with one host or several (a replica set's
 * `h1:27017,h2:27017`, which WHATWG's URL refuses), or `mongodb+srv://` with one host and no port;
 * then an optional path and options. Checked by form only: the driver is not loaded here (tracing
 * must patch it before its first import, and configuration is read before tracing starts); its own
 * parser judges the options when the client is made, and a string it refuses stops the process
 * naming this variable too (core/platform/db/mongo.ts).
 */
export function mongoUri(name: string, options: Common<string>) {
  const expects = 'a MongoDB connection string (mongodb:// or mongodb+srv://)';
  const host = '(?:\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._%-]+)';
  const form = new RegExp(
    `^mongodb(\\+srv)?://(?:[^@/?#]+@)?(${host}(?::\\d{1,5})?(?:,${host}(?::\\d{1,5})?)*)(?:/[^?#]*)?(?:\\?[^#]*)?$`,
  );
  const read = (raw: string): Read => {
    const m = form.exec(raw);
    if (m === null) return { ok: false };
    if (m[1] !== undefined && (m[2]!.includes(',') || /:\d+$/.test(m[2]!))) {
      return { ok: false, got: 'mongodb+srv:// with a port or several hosts' };
    }
    return { ok: true, value: raw };
  };
  return Type.String(variable(name, options, expects, read, true));
}

/** Free text; `pattern` with its plain-words `patternText` when only some strings will do. */
export function text(name: string, options: Common<string> & { pattern?: string; patternText?: string }) {
  const read = (raw: string): Read => ({ ok: true, value: raw });
  const expects = options.patternText ?? 'text';
  const pattern = options.pattern === undefined ? {} : { pattern: options.pattern };
  return Type.String({ ...variable(name, options, expects, read), ...pattern });
}

/** Daily hours `HH:MM-HH:MM` (00:00 to 24:00), the start before the end; read as {start, end}. */
export function hoursRange(name: string, options: Common<{ start: string; end: string }>) {
  const read = (raw: string): Read => {
    const m = /^(([01]\d|2[0-3]):[0-5]\d)-(([01]\d|2[0-3]):[0-5]\d|24:00)$/.exec(raw.trim());
    if (m === null || m[1]! >= m[3]!) return { ok: false, got: echo(raw) };
    return { ok: true, value: { start: m[1]!, end: m[3]! } };
  };
  const expects = 'daily hours HH:MM-HH:MM (00:00 to 24:00), the start before the end';
  return Type.Object({ start: Type.String(), end: Type.String() }, variable(name, options, expects, read));
}

/** A key or secret of at least `minLength` characters; never echoed in a message. */
export function secret(name: string, options: Common<string> & { minLength: number }) {
  const read = (raw: string): Read => ({ ok: true, value: raw });
  const expects = options.minLength > 1 ? `a secret of at least ${options.minLength} characters` : 'a secret';
  return Type.String({ ...variable(name, options, expects, read, true), minLength: options.minLength });
}

/** A comma-separated list of names, each matching `item`; repeats are dropped. */
export function list(name: string, options: Common<string[]> & { item: string; itemText: string }) {
  const read = (raw: string): Read => {
    const items = raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    return { ok: true, value: [...new Set(items)] };
  };
  const expects = `a comma-separated list of ${options.itemText}`;
  return Type.Array(Type.String({ pattern: options.item }), {
    ...variable(name, options, expects, read),
    minItems: 1,
  });
}

/** Unset means undefined (the Config property is optional). */
export const optional = <T extends TSchema>(schema: T) => Type.Optional(schema);

/** Whether a text is 32 bytes in base64 or base64url (what `openssl rand -base64 32` prints). */
const isKey32 = (text: string): boolean =>
  /^[A-Za-z0-9+/_-]{43}=?$/.test(text) &&
  Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64').length === 32;

/** A 32-byte key in base64; never echoed in a message. */
export function key32(name: string, options: Common<string>) {
  const read = (raw: string): Read => (isKey32(raw) ? { ok: true, value: raw } : { ok: false });
  return Type.String(variable(name, options, '32 bytes in base64 (`openssl rand -base64 32`)', read, true));
}

/** A comma-separated list of 32-byte keys in base64; never echoed in a message. */
export function key32List(name: string, options: Common<string[]>) {
  const read = (raw: string): Read => {
    const keys = raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    return keys.length > 0 && keys.every(isKey32) ? { ok: true, value: [...new Set(keys)] } : { ok: false };
  };
  const expects = 'a comma-separated list of keys, each 32 bytes in base64';
  return Type.Array(Type.String(), { ...variable(name, options, expects, read, true), minItems: 1 });
}
