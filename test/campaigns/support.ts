import { expect } from 'vitest';
import { sign as retellSign } from 'retell-sdk';
import type { ApiClient } from '../helpers/client.js';
import { eventually } from '../helpers/eventually.js';
import type { Stack } from '../helpers/stack.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { CallDoc } from '../../core/domain/calls/calls.js';

export { createAgent } from '../calls/support.js';

/** Posts a call webhook to the firm signed as Retell signs it (its SDK) with `apiKey`: 200 expected. */
export async function postRetellSigned(stack: Stack, apiKey: string, slug: string, body: unknown) {
  const raw = JSON.stringify(body);
  const res = await stack.api.request('POST', `/api/v2/${slug}/webhook`, {
    rawBody: raw,
    headers: { 'Content-Type': 'application/json', 'x-retell-signature': await retellSign(raw, apiKey) },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** `count` distinct answered US numbers (+1 212 555 01xx style), starting at `from`. */
export function usPhones(count: number, from = 0, prefix = '+1212'): string[] {
  return Array.from(
    { length: count },
    (_, i) => `${prefix}${String(5_550_000 + 1 + from + i).padStart(7, '0')}`,
  );
}

export async function createCampaign(
  client: ApiClient,
  body: Record<string, unknown>,
): Promise<{ id: string; leads_total: number }> {
  const res = await client.post('/api/leads/campaigns', { name: 'Spring follow-up', ...body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

export async function launch(client: ApiClient, id: string): Promise<number> {
  const res = await client.post(`/api/leads/campaigns/${id}/launch`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.launched).toBe(true);
  return res.body.calls_queued as number;
}

export async function getCampaign(client: ApiClient, id: string): Promise<any> {
  const res = await client.get(`/api/leads/campaigns/${id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Polls the campaign until `check` passes. */
export function waitForCampaign(
  client: ApiClient,
  id: string,
  check: (campaign: any) => boolean,
  timeoutMs = 60_000,
): Promise<any> {
  return eventually(
    async () => {
      const campaign = await getCampaign(client, id);
      expect(check(campaign), JSON.stringify(campaign)).toBe(true);
      return campaign;
    },
    timeoutMs,
    100,
  );
}

export const callsOf = (stack: Stack) => stack.services.mongo.db.collection<CallDoc>(COLLECTIONS.calls);

export const campaignCalls = (stack: Stack, campaignId: string) =>
  callsOf(stack).find({ campaign_id: campaignId }).toArray();

/** The simulator's own records (its "provider database") of calls to these numbers. */
export const simulatorDials = (stack: Stack, numbers: string[]) =>
  stack.services.mongo.db
    .collection<{ to_number: string; metadata: { call_id: string } }>(COLLECTIONS.simulatorCalls)
    .find({ to_number: { $in: numbers } })
    .toArray();

/** The greatest number of intervals [start, end) open at one instant. */
export function maxOverlap(intervals: Array<[number, number]>): number {
  const edges = intervals.flatMap(([s, e]) => [
    [s, 1],
    [e, -1],
  ]) as Array<[number, number]>;
  // At equal times an end comes before a start: [a, b) and [b, c) do not overlap.
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of edges) {
    open += d;
    max = Math.max(max, open);
  }
  return max;
}
