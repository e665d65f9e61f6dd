// Shared steps of the widget-key suites: a key for a firm, and a session asked for from a page origin.
import { expect } from 'vitest';
import type { ApiClient, ApiResponse } from '../helpers/client.js';

export interface WidgetKey {
  id: string;
  key: string;
  firmSlug: string;
  allowed_origins: string[];
  agent_id: string | null;
  challenge: 'altcha' | null;
}

export async function createWidgetKey(
  client: ApiClient,
  firmSlug: string,
  fields: Record<string, unknown> = {},
): Promise<WidgetKey> {
  const res = await client.post('/api/widget-keys', {
    firmSlug,
    name: 'Website',
    allowed_origins: ['https://firm.example'],
    ...fields,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as WidgetKey;
}

/** POST /api/widget/session as a browser on `origin` would send it (no Origin header when undefined). */
export function askSession(
  api: ApiClient,
  origin: string | undefined,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  return api.post('/api/widget/session', body, {
    ...(origin === undefined ? {} : { Origin: origin }),
    ...headers,
  });
}
