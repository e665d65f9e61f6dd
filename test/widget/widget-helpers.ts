// Shared steps of the widget suites: reading the test page's settings block, and asking every
// route of the app with one token.
import { expect } from 'vitest';
import type { AnyRoute } from '../../api/route.js';
import { compileValidator } from '../../api/validation.js';
import type { ApiClient, ApiResponse } from '../helpers/client.js';
import type { Stack } from '../helpers/stack.js';

export interface PageConfig {
  state: 'ready' | 'needs_firm' | 'no_agents';
  firmSlug?: string;
  token?: string;
  tokenExpiresAt?: string;
  scriptUrl?: string;
  agents?: Array<{ id: string; name: string }>;
  settings?: { agentId: string; title: string; greeting: string; primaryColor: string; position: string };
  widgetKey?: { id: string; name: string; key: string } | null;
  /** The key the snippet names: the firm's newest, or YOUR_WIDGET_KEY with none. */
  snippetKey?: string;
}

/** The JSON settings block of a served test page. */
export function pageConfig(html: string): PageConfig {
  const match = /<script type="application\/json" id="intake-widget-config">([\s\S]*?)<\/script>/.exec(html);
  expect(match, 'the page has its settings block').not.toBeNull();
  return JSON.parse(match![1]!) as PageConfig;
}

/** The claims of a JWT (no verification: what the token says about itself). */
export function jwtClaims(token: string): Record<string, unknown> {
  const payload = token.replace(/^iwt_/, '').split('.')[1]!;
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** The chat routes: the only ones a widget token may use (docs/authentication.md#widget-tokens). */
export const CHAT_OPERATIONS = ['createChat', 'chatCompletion', 'endChat', 'getChat'];

/** Values tried for a path parameter, in order: the first one its schema accepts is used. */
const PARAM_CANDIDATES = [
  'abc123',
  '0123456789abcdef01234567', // an ObjectId's form
  '3fa85f64-5717-4562-b3fc-2c963f66afa6', // a UUID
  'x',
];

/** The values a parameter declared as a union of literals takes (the agent tools' `{name}`). */
function literalsOf(route: AnyRoute, name: string): string[] {
  const schema = (route.params as { properties?: Record<string, { anyOf?: Array<{ const?: unknown }> }> })
    ?.properties?.[name];
  return (schema?.anyOf ?? []).flatMap((s) => (typeof s.const === 'string' ? [s.const] : []));
}

/** Whether `route`'s path parameters accept `params` as far as parameter `name` goes. */
function accepts(route: AnyRoute, params: Record<string, string>, name: string): boolean {
  if (route.params === undefined) return true;
  try {
    compileValidator(route.params, 'params')(params);
    return true;
  } catch (err) {
    const details = (err as { details?: Array<{ path: string }> }).details ?? [];
    return !details.some((d) => d.path === `/${name}`);
  }
}

/**
 * A request to `route` with a path whose parameters pass its validation (which runs before the
 * credentials are looked at), so that the answer is about the token, and a body for writes.
 */
function requestFor(route: AnyRoute, firm: string): { method: string; path: string; body?: unknown } {
  const names = [...route.path.matchAll(/\{([A-Za-z_]+)\}/g)].map((m) => m[1]!);
  const params: Record<string, string> = {};
  for (const name of names) {
    const named = name === 'firm' || name === 'slug' ? [firm] : [];
    const candidates = [...named, ...literalsOf(route, name), ...PARAM_CANDIDATES];
    params[name] = candidates.find((value) => accepts(route, { ...params, [name]: value }, name)) ?? 'abc123';
  }
  const path = route.path.replace(/\{([A-Za-z_]+)\}/g, (_m, name: string) =>
    encodeURIComponent(params[name]!),
  );
  return ['POST', 'PUT', 'PATCH'].includes(route.method)
    ? { method: route.method, path, body: {} }
    : { method: route.method, path };
}

/**
 * Sends `client`'s token to every route of the running app that takes a token, except the chat
 * routes, and returns the answers by operationId. Routes added later are asked too.
 */
export async function askEveryNonChatRoute(
  stack: Stack,
  client: ApiClient,
  firm: string,
): Promise<Map<string, ApiResponse>> {
  const answers = new Map<string, ApiResponse>();
  for (const route of stack.web.app.routes) {
    if (route.auth.kind === 'none' || CHAT_OPERATIONS.includes(route.operationId)) continue;
    const { method, path, body } = requestFor(route, firm);
    answers.set(
      `${route.operationId} ${method} ${path}`,
      await client.request(method, path, body === undefined ? {} : { body }),
    );
  }
  return answers;
}
