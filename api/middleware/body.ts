import type { Context, Middleware } from 'koa';
import bodyParser from 'koa-bodyparser';
import { clip, invalidRequest, unsupportedMediaType } from '../../core/platform/errors.js';
import { storableText } from '../../core/platform/text.js';

const DEFAULT_BODY_LIMIT = '2mb';
/**
 * JSON nested deeper than this is a 400 (docs/errors.md#limits-on-every-request): validation, logging and
 * queues recurse.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether parsed JSON nests objects and arrays more than `limit` levels deep ({} and [] are
 * one level each). It recurses at most `limit` + 1 levels: no input can overflow the stack here.
 */
export function nestedDeeperThan(value: unknown, limit: number): boolean {
  return typeof value === 'object' && value !== null && deeperThan(value, 1, limit);
}

// Recursion no deeper than `limit` + 1, and nothing allocated per node: a 3 MB call_analyzed
// has tens of thousands of objects (a queue of [node, depth] pairs cost more than parsing it).
// Only objects and arrays are recursed into, and arrays by index: a call for every string and
// number, and the arrays' iterator, were a fifth of the walk, and the walk was half of what a
// large call webhook cost beyond a bare node:http handler
// (docs/performance.md#the-large-bodies-surplus-the-depth-walk-2026-12-07-evening).
function deeperThan(node: object, depth: number, limit: number): boolean {
  if (depth > limit) return true;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child: unknown = node[i];
      if (typeof child === 'object' && child !== null && deeperThan(child, depth + 1, limit)) return true;
    }
    return false;
  }
  const record = node as Record<string, unknown>;
  for (const key in record) {
    const child = record[key];
    if (typeof child === 'object' && child !== null && deeperThan(child, depth + 1, limit)) return true;
  }
  return false;
}

/**
 * Whether any string or key in parsed JSON holds the NUL character; with `replace`, NULs are
 * replaced by U+FFFD in place instead (webhook senders' text is kept rather than refused).
 */
export function handleNul(value: unknown, replace: boolean): boolean {
  let found = false;
  const fix = (text: string): string => {
    if (!text.includes('\u0000')) return text;
    found = true;
    return replace ? storableText(text) : text;
  };
  const pending: unknown[] = [value];
  for (let node = pending.pop(); node !== undefined || pending.length > 0; node = pending.pop()) {
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      node.forEach((item, i) => {
        if (typeof item === 'string') node[i] = fix(item);
        else pending.push(item);
      });
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const item = record[key];
      const fixedKey = fix(key);
      const fixedItem = typeof item === 'string' ? fix(item) : item;
      if (fixedKey !== key) delete record[key];
      if (fixedKey !== key || fixedItem !== item) {
        Object.defineProperty(record, fixedKey, {
          value: fixedItem,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      if (typeof item !== 'string') pending.push(item);
      if (found && !replace) return true;
    }
  }
  return found;
}

/**
 * The JSON pointer of the first string or key (in document order) of parsed JSON that holds the
 * NUL character, at most 100 characters, a NUL in a key shown as U+FFFD; null when none, or when
 * the whole body is such a string (no field to name).
 */
export function firstNulPointer(value: unknown): string | null {
  const token = (key: string): string => storableText(key.replace(/~/g, '~0').replace(/\//g, '~1'));
  const pending: Array<[unknown, string]> = [[value, '']];
  for (let entry = pending.pop(); entry !== undefined; entry = pending.pop()) {
    const [node, path] = entry;
    if (typeof node === 'string') {
      if (node.includes('\u0000')) return path === '' ? null : path.slice(0, 100);
      continue;
    }
    if (typeof node !== 'object' || node === null) continue;
    const keys = Object.keys(node);
    // Pushed last first, so that the first field comes off the stack first.
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i]!;
      pending.push([(node as Record<string, unknown>)[key], `${path}/${token(key)}`]);
    }
    const own = Array.isArray(node) ? undefined : keys.find((key) => key.includes('\u0000'));
    if (own !== undefined) return `${path}/${token(own)}`.slice(0, 100);
  }
  return null;
}

/** The Content-Type headers clients send nearly always, known to be JSON without parsing them. */
const PLAIN_JSON = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
]);

/** Whether a request with a body says it is JSON (`application/json` or `application/*+json`). */
export function isJsonRequest(ctx: Context): boolean {
  const type = ctx.req.headers['content-type'];
  return (type !== undefined && PLAIN_JSON.has(type)) || Boolean(ctx.is('json', '+json'));
}

function hasBody(headers: Record<string, string | string[] | undefined>): boolean {
  const length = headers['content-length'];
  if (headers['transfer-encoding'] !== undefined) return true;
  return length !== undefined && length !== '0';
}

/**
 * JSON bodies only (415 otherwise), with a size limit (413), a nesting limit (400) and the raw
 * text kept for signatures.
 */
export function jsonBody(
  limit: string = DEFAULT_BODY_LIMIT,
  options: { nul?: 'reject' | 'replace'; verbatimJson?: boolean } = {},
): Middleware {
  const parse = bodyParser({
    enableTypes: ['json'],
    jsonLimit: limit,
    strict: true,
    extendTypes: { json: ['application/json', 'application/*+json'] },
    // The check the 415 below makes, which knows the usual headers without parsing them: the
    // parser's own matches the Content-Type against each of its seven types on every request.
    detectJSON: isJsonRequest,
    // A "__proto__" key is refused (co-body's default) unless the route keeps the JSON as text;
    // then it is an ordinary own key, as JSON.parse makes it, never the object's prototype.
    ...(options.verbatimJson ? { onProtoPoisoning: 'ignore' } : {}),
    onerror: (err) => {
      throw err;
    },
  });
  return async (ctx, next) => {
    if (['POST', 'PUT', 'PATCH'].includes(ctx.method) && hasBody(ctx.req.headers) && !isJsonRequest(ctx)) {
      throw unsupportedMediaType('Send the body as JSON with Content-Type: application/json.');
    }
    let read = false;
    try {
      await parse(ctx, async () => {
        read = true;
        // Right after parsing, before anything (validation, webhook authentication) walks the body.
        if (nestedDeeperThan((ctx.request as { body?: unknown }).body, MAX_JSON_DEPTH)) {
          throw invalidRequest(
            `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels; send flatter data.`,
          );
        }
        // The NUL character cannot be stored (PostgreSQL-backed stores refuse it): our own bodies
        // get a 400, not a 500; a webhook sender's text keeps the rest, with U+FFFD in its place.
        // (A route that keeps the JSON as text says so, `verbatimJson`, and keeps NULs as sent.)
        const raw = (ctx.request as { rawBody?: string }).rawBody ?? '';
        const replace = options.nul === 'replace';
        if (
          !options.verbatimJson &&
          /\\u0000/i.test(raw) &&
          handleNul((ctx.request as { body?: unknown }).body, replace)
        ) {
          if (!replace) {
            const path = firstNulPointer((ctx.request as { body?: unknown }).body);
            const message = 'must not contain the NUL character (\\u0000)';
            throw invalidRequest(
              path === null
                ? 'Text in the JSON body may not contain the NUL character (\\u0000).'
                : `Text in the JSON body may not contain the NUL character (\\u0000): ${path} ${message}.`,
              path === null ? undefined : [{ path, message }],
            );
          }
        }
        await next();
      });
    } catch (err) {
      // A body that does not decompress as its Content-Encoding says fails in zlib, with no HTTP
      // status: the client's mistake (400), not ours (500).
      if (!read && compressed(ctx) && typeof (err as { status?: unknown }).status !== 'number') {
        throw invalidRequest(
          `The request body is not valid ${clip(ctx.get('Content-Encoding'))} data; send it compressed as its Content-Encoding says, or without Content-Encoding.`,
        );
      }
      throw err;
    }
  };
}

/** Whether the request says its body is compressed (a Content-Encoding other than identity). */
function compressed(ctx: Context): boolean {
  const encoding = ctx.get('Content-Encoding').trim().toLowerCase();
  return encoding !== '' && encoding !== 'identity';
}
