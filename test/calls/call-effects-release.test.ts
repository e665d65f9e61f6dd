// Calls stored before the effect records moved off the call document (they were at
// `effects.<name>` and `crm_sync.*` on the call, the lead at `lead_id`): release moves them to
// the call's effects document, and the pipeline then finds them there — a done effect is not
// done again, an effect not done yet runs once — and get-call shows what it showed before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCallAnalysis } from '../../core/domain/call-analysis/pipeline.js';
import { newCallRecord, STATUS_RANK, type CallDoc } from '../../core/domain/calls/calls.js';
import { newEffectRecord } from '../../core/platform/db/effect-records.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { releaseCallEffectRecords } from '../../core/platform/db/migrations/effect-records.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';

let stack: Stack;
let slack: FakeSlack;

beforeAll(async () => {
  slack = await startFakeSlack();
  stack = await startStack({ workers: true }); // no SMTP_URL: an email run now would be `skipped`
});
afterAll(async () => {
  await stack?.stop();
  await slack?.close();
});

const done = (result: Record<string, unknown>, at: Date) => ({
  ...newEffectRecord(),
  state: 'done' as const,
  attempts: 1,
  started_at: at,
  finished_at: at,
  result,
});

/** A finished, analysed call with its records on itself, as the previous version stored it. */
function oldCall(firm: string): CallDoc & Record<string, unknown> {
  const at = new Date(Date.now() - 60_000);
  const providerCallId = `call_${rand(8)}`;
  const call = newCallRecord({
    callId: `call_${rand(8)}`,
    firm,
    agent_id: null,
    direction: 'inbound',
    from_number: '+14155550142',
    to_number: '+14155550100',
    dynamic_variables: {},
    provider: 'webhook',
    provider_call_id: providerCallId,
    dialled: true,
  });
  return {
    ...call,
    status: 'ended',
    status_rank: STATUS_RANK.ended,
    finished: true,
    start_timestamp: at.getTime() - 90_000,
    end_timestamp: at.getTime(),
    duration_ms: 90_000,
    disconnection_reason: 'user_hangup',
    transcript: 'Agent: May I have your name?\nUser: Jane Doe.',
    call_analysis: {
      call_summary: 'A car accident.',
      user_sentiment: null,
      call_successful: true,
      custom_analysis_data: {},
    },
    extraction: {
      first_name: 'Jane',
      last_name: 'Doe',
      phone: '+14155550142',
      email: 'jane.doe@example.com',
      case_type: 'Personal injury',
      summary: 'A car accident.',
      urgency: 'normal',
      extractor: 'deterministic',
      fallback_reason: null,
      extracted_at: at,
    },
    // The old layout: the records on the call, the lead's id beside them; team_chat not run yet.
    effects: {
      lead: done({ lead_id: 'lead_from_before' }, at),
      crm: {
        ...newEffectRecord(),
        state: 'skipped',
        attempts: 1,
        finished_at: at,
        result: { reason: 'Recorded before the move.' },
      },
      email: done({ message_id: '<before@test>', accepted: ['intake@firm.test'] }, at),
    },
    crm_sync: { contact: done({ contact_id: 41, reused: false }, at) },
    lead_id: 'lead_from_before',
  };
}

describe('release moves the effect records of calls stored the old way', () => {
  it('moves them off the call; the pipeline finds them done and runs only what was not done; get-call shows them', async () => {
    const slackUrl = slack.webhookUrl();
    const firm = await createFirm(stack, { slack_webhook_url: slackUrl });
    const db = stack.services.mongo.db;
    const calls = db.collection<Record<string, unknown> & { _id: string }>(COLLECTIONS.calls);
    const call = oldCall(firm.slug);
    await calls.insertOne(call);

    const moved = await releaseCallEffectRecords(db, stack.services.redis, stack.config);
    expect(moved.calls).toBeGreaterThanOrEqual(1);
    // Nothing left on the call; everything in its effects document, as it was.
    const after = await calls.findOne({ _id: call._id });
    expect(after).not.toHaveProperty('effects');
    expect(after).not.toHaveProperty('crm_sync');
    expect(after?.transcript).toBe(call.transcript);
    const records = await db.collection(COLLECTIONS.callEffects).findOne({ _id: call._id as never });
    expect(records).toEqual({ _id: call._id, effects: call.effects, crm_sync: call.crm_sync });
    // Run again: nothing to move.
    expect((await releaseCallEffectRecords(db, stack.services.redis, stack.config)).calls).toBe(0);

    // The pipeline runs again for the call (a repeated call_analyzed): done stays done, the rest runs.
    await startCallAnalysis(stack.services, firm.slug, call._id);
    const shown = await eventually(async () => {
      const res = await firm.client.get(`/api/v2/get-call/${call._id}`);
      expect(res.body.effects.team_chat).toBe('done');
      return res.body;
    });
    expect(shown.effects).toEqual({ lead: 'done', crm: 'skipped', email: 'done', team_chat: 'done' });
    expect(shown.effect_reasons).toEqual({ crm: 'Recorded before the move.' });
    expect(shown.lead_id).toBe('lead_from_before');
    // Not done again: no lead made now (the old one's id stands), no mail (it would be skipped now).
    expect(await db.collection(COLLECTIONS.leads).countDocuments({ firm: firm.slug })).toBe(0);
    const stored = await db.collection(COLLECTIONS.callEffects).findOne({ _id: call._id as never });
    expect(stored?.effects).toMatchObject({
      lead: { state: 'done', attempts: 1 },
      email: { state: 'done', attempts: 1, result: { message_id: '<before@test>' } },
      team_chat: { state: 'done', attempts: 1 },
    });
    expect(slack.messages(slackUrl)).toHaveLength(1);
    // Still no record on the call itself.
    expect(await calls.findOne({ _id: call._id }, { projection: { effects: 1, crm_sync: 1 } })).toEqual({
      _id: call._id,
    });
  });
});
