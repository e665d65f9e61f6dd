// Shared steps of the widget-key suites: a key for a firm, and a session asked for from a page origin.
import { createHash } from 'node:crypto';
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

/**
 * The number an ALTCHA widget finds for a challenge: the one whose hash of salt and number is the
 * challenge, tried from 0 up, as altcha-lib's solveChallenge does; null if none up to maxnumber.
 * node:crypto in a loop: solveChallenge awaits WebCrypto for every number, 2–5 s of CPU a solve
 * on this machine where this takes 0.1 s. (The browser test has Chromium solve it.)
 */
export function solvedNumber(c: {
  challenge: string;
  salt: string;
  algorithm: string;
  maxnumber?: number;
}): number | null {
  const algorithm = c.algorithm.replace('-', '').toLowerCase();
  const max = c.maxnumber ?? 1_000_000;
  for (let n = 0; n <= max; n++) {
    if (
      createHash(algorithm)
        .update(c.salt + n)
        .digest('hex') === c.challenge
    )
      return n;
  }
  return null;
}
