import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import { ApiClient } from './client.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { CallDoc } from '../../core/domain/calls/calls.js';

// Outbound calls through the simulator against a service running as child processes (no
// in-process Stack): each call is a web request, a place-call job, the simulator's steps
// (jobs) and its webhooks, call-event and call-effect jobs, and a lead — Redis all the way.

export interface Firm {
  slug: string;
  client: ApiClient;
  agentId: string;
}

async function ok<T>(res: Promise<{ status: number; body: T }>, what: string): Promise<T> {
  const { status, body } = await res;
  if (status !== 200) throw new Error(`${what}: ${status} ${JSON.stringify(body)}`);
  return body;
}

/** A firm, its API key and an agent, made through the API with the platform key. */
export async function firmWithAgent(
  baseUrl: string,
  adminKey: string,
  settings: Record<string, unknown> = {},
): Promise<Firm> {
  const admin = new ApiClient(baseUrl).withToken(adminKey);
  const slug = `firm-${randomBytes(4).toString('hex')}`;
  await ok(admin.post('/api/firms', { slug, name: `Firm ${slug}`, settings }), 'create firm');
  const { key } = await ok(admin.post('/api/auth/api-keys', { firmSlug: slug, name: 'load' }), 'api key');
  const client = new ApiClient(baseUrl).withToken(key as string);
  const { agent_id } = await ok(
    client.post('/api/v2/create-agent', {
      firmSlug: slug,
      agent_name: 'Intake',
      voice_id: 'sim-en-us-ava',
      begin_message: 'Hi, this is the intake line of the firm.',
      intake_questions: [{ key: 'full_name', question: 'May I have your full name?' }],
    }),
    'create agent',
  );
  return { slug, client, agentId: agent_id as string };
}

/** One create-outbound-call with an Idempotency-Key; the answer and when it came. */
export async function createCall(
  firm: Firm,
  key: string,
  index: number,
): Promise<{ status: number; callId?: string; at: number }> {
  const res = await firm.client
    .post(
      '/api/v2/create-outbound-call',
      {
        toNumber: `+1415555${String(1000 + (index % 8000)).padStart(4, '0')}`,
        agentId: firm.agentId,
        firmSlug: firm.slug,
        dynamicVariables: { full_name: `Caller ${index}` },
      },
      { 'Idempotency-Key': key },
    )
    .catch(() => ({ status: 0, body: {} as Record<string, unknown> }));
  const callId = (res.body as { call_id?: string }).call_id;
  return { status: res.status, at: Date.now(), ...(callId === undefined ? {} : { callId }) };
}

/** What the database holds for these calls: how far each got, its leads and its dials. */
export async function callOutcomes(
  db: Db,
  callIds: string[],
): Promise<Map<string, { status: string; leads: number; dialAttempts: number; updatedAt: Date | null }>> {
  const outcomes = new Map<
    string,
    { status: string; leads: number; dialAttempts: number; updatedAt: Date | null }
  >();
  for (const id of callIds) {
    const call = await db.collection<CallDoc>(COLLECTIONS.calls).findOne({ _id: id });
    const leads = await db.collection(COLLECTIONS.leads).countDocuments({ call_id: id });
    outcomes.set(id, {
      status: call?.status ?? 'missing',
      leads,
      dialAttempts: call?.dial?.attempts ?? 0,
      updatedAt: call?.updated_at ?? null,
    });
  }
  return outcomes;
}
