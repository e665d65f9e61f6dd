import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startStack, createFirm, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { createAgent, waitForCall } from '../calls/support.js';
import { createCampaign, launch, simulatorDials, waitForCampaign } from '../campaigns/support.js';
import { clock } from '../../core/platform/clock.js';
import { jobId } from '../../jobs/define.js';
import { addDncEntry } from '../../core/domain/compliance/dnc-store.js';
import { indexListed } from '../../core/domain/compliance/dnc-index.js';
import { dialDecisionsCollection } from '../../core/domain/compliance/dial-decisions.js';
import { zonedTimeToUtc } from '../../core/platform/time-zone.js';
import { redisKeys } from '../../core/platform/redis-keys.js';

// The dial gate on a real stack with the platform's defaults (08:00-21:00 callee time, 3 dial
// attempts per number per rolling 24 h, state rules on) and the gate's clock set to chosen
// instants (core/platform/clock.ts): no test depends on the hour it runs at, none sleeps 24 h.

let stack: Stack;
const ZONE = 'America/New_York';
/** A Wednesday in New York (EDT), at `hhmm` local time. */
const nyAt = (hhmm: number): number => zonedTimeToUtc({ year: 2026, month: 6, day: 17 }, hhmm, ZONE);

beforeAll(async () => {
  stack = await startStack({
    workers: true,
    env: { CALLING_HOURS: '08:00-21:00', DIAL_ATTEMPTS_PER_DAY: '3', COMPLIANCE_STATE_RULES: 'true' },
  });
});
afterAll(async () => {
  clock.reset();
  await stack?.stop();
});
afterEach(() => clock.reset());

let n = 0;
/** A fresh number of area code `area` for each test (answered by the simulator). */
const phone = (area = '212'): string => `+1${area}555${String(1100 + ++n).padStart(4, '0')}`;

async function firmWithAgent(settings: Record<string, unknown> = {}) {
  const firm = await createFirm(stack, { timezone: ZONE, ...settings });
  const agentId = await createAgent(firm.client, firm.slug);
  return { ...firm, agentId };
}

/** Lists a number as the API does: its key document, then the list's Redis index. */
async function putOnDnc(firm: string, number: string): Promise<void> {
  await addDncEntry(stack.services.mongo.db, firm, number, {
    source: 'api',
    reason: 'test',
    added_by: 'test',
  });
  await indexListed(stack.services, firm, [number]);
}

const decisionsOf = (firm: string, number: string) =>
  dialDecisionsCollection(stack.services.mongo.db).find({ firm, phone: number }).sort({ at: 1 }).toArray();

/** Promotes a delayed place-call job (its wall-clock delay is what the shifted gate clock skipped). */
async function promotePlaceCall(callId: string): Promise<void> {
  const job = await eventually(async () => {
    const found = await stack.services.queues.calls.getJob(jobId(callId));
    expect(await found?.getState()).toBe('delayed');
    return found!;
  });
  await job.promote();
}

/** Promotes a delayed place-call job that the gate defers again: returns once it is delayed anew. */
async function promoteDeferred(callId: string): Promise<void> {
  const before = (await stack.services.queues.calls.getJob(jobId(callId)))?.processedOn ?? 0;
  await promotePlaceCall(callId);
  await eventually(async () => {
    const job = await stack.services.queues.calls.getJob(jobId(callId));
    expect(job?.processedOn ?? 0).toBeGreaterThan(before);
    expect(await job?.getState()).toBe('delayed');
  });
}

describe('the dial gate at create-outbound-call', () => {
  it("refuses a number on the firm's do-not-call list: 409 dial_blocked naming dnc, recorded, nothing created", async () => {
    clock.set(nyAt(14 * 60));
    const firm = await firmWithAgent();
    const number = phone();
    await putOnDnc(firm.slug, number);
    const res = await firm.client.post('/api/v2/create-outbound-call', {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      toNumber: number,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(409);
    expect(res.body.error.code).toBe('dial_blocked');
    expect(res.body.error.details).toEqual([{ path: '/toNumber', message: expect.stringMatching(/^dnc: /) }]);
    const decisions = await decisionsOf(firm.slug, number);
    expect(decisions.map((d) => [d.stage, d.answer, d.reason])).toEqual([['request', 'block', 'dnc']]);
    expect(await stack.services.mongo.db.collection('calls').countDocuments({ to_number: number })).toBe(0);
  });

  it("outside the callee's hours: 409 dial_deferred with retry_at; when_allowed schedules the call and it is placed when allowed", async () => {
    const firm = await firmWithAgent();
    const number = phone();
    const body = { firmSlug: firm.slug, agentId: firm.agentId, toNumber: number };
    clock.set(nyAt(6 * 60 + 30)); // 06:30 in New York
    const sent = clock.now();
    const refused = await firm.client.post('/api/v2/create-outbound-call', body);
    const answered = clock.now();
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('dial_deferred');
    const eight = nyAt(8 * 60);
    expect(refused.body.error.retry_at).toBe(new Date(eight).toISOString());
    expect(refused.body.error.details[0].message).toMatch(/^hours: /);
    // The seconds from the gate's now to 08:00, rounded up: 90 minutes when the request took less
    // than a second (the gate's clock keeps running while it is served; a busy machine is slower).
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeLessThanOrEqual(Math.ceil((eight - sent) / 1000));
    expect(retryAfter).toBeGreaterThanOrEqual(Math.ceil((eight - answered) / 1000));
    expect(Math.ceil((eight - sent) / 1000)).toBe(90 * 60);

    const key = { 'Idempotency-Key': `when-allowed-${number}` };
    const scheduled = await firm.client.post(
      '/api/v2/create-outbound-call',
      { ...body, when_allowed: true },
      key,
    );
    expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
    expect(scheduled.body.status).toBe('scheduled');
    const callId = scheduled.body.call_id as string;
    // A repeat with the same key answers as the first did: the same call, still `scheduled`.
    const repeat = await firm.client.post(
      '/api/v2/create-outbound-call',
      { ...body, when_allowed: true },
      key,
    );
    expect(repeat.body).toEqual(scheduled.body);
    const call = await firm.client.get(`/api/v2/get-call/${callId}`);
    expect(call.body).toMatchObject({ status: 'registered', scheduled_for: nyAt(8 * 60) });
    expect(await simulatorDials(stack, [number])).toHaveLength(0);

    // Still before 08:00 when the job comes early: the dial stage defers it again, nothing dialled.
    clock.set(nyAt(7 * 60 + 59));
    await promoteDeferred(callId);
    await promoteDeferred(callId);
    expect(await simulatorDials(stack, [number])).toHaveLength(0);

    clock.set(nyAt(8 * 60 + 1));
    await promotePlaceCall(callId);
    await waitForCall(firm.client, callId, (c) => c.status === 'ended');
    expect(await simulatorDials(stack, [number])).toHaveLength(1);
    const decisions = await decisionsOf(firm.slug, number);
    expect(decisions.map((d) => [d.stage, d.answer, d.reason])).toEqual([
      ['request', 'defer', 'hours'],
      ['request', 'defer', 'hours'],
      ['dial', 'defer', 'hours'],
      ['dial', 'allow', null],
    ]);
    expect(decisions[3]!.zones[0]).toMatchObject({
      zone: ZONE,
      local: '2026-06-17 08:01 (Wed)',
      allowed: true,
    });
  });

  it('a scheduled call whose number goes on the do-not-call list before its time is never dialled: it ends blocked, recorded', async () => {
    clock.set(nyAt(22 * 60));
    const firm = await firmWithAgent();
    const number = phone();
    const res = await firm.client.post('/api/v2/create-outbound-call', {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      toNumber: number,
      when_allowed: true,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.status).toBe('scheduled');
    await putOnDnc(firm.slug, number);
    clock.set(nyAt(24 * 60 + 9 * 60));
    await promotePlaceCall(res.body.call_id);
    const call = await waitForCall(firm.client, res.body.call_id, (c) => c.status === 'error');
    expect(call).toMatchObject({ disconnection_reason: 'dial_blocked', dial_block_reason: 'dnc' });
    expect(await simulatorDials(stack, [number])).toHaveLength(0);
    const decisions = await decisionsOf(firm.slug, number);
    expect(decisions.map((d) => [d.stage, d.answer, d.reason])).toEqual([
      ['request', 'defer', 'hours'],
      ['dial', 'block', 'dnc'],
    ]);
  });

  it('refuses a bad when_allowed with a 400 in the error shape', async () => {
    clock.set(nyAt(14 * 60));
    const firm = await firmWithAgent();
    const res = await firm.client.post('/api/v2/create-outbound-call', {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      toNumber: phone(),
      when_allowed: 'yes',
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    // A known field of the wrong type (not "is not an allowed field"): the schema declares it boolean.
    expect(res.body.error.details).toEqual([{ path: '/when_allowed', message: 'must be boolean' }]);
  });
});

describe('the dial gate in campaigns', () => {
  it('a queued campaign call to a number put on the do-not-call list after queueing is not dialled; its decision is recorded', async () => {
    clock.set(nyAt(6 * 60)); // before the callee's hours: the campaign call waits
    const firm = await firmWithAgent();
    const [kept, barred] = [phone(), phone()];
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId: firm.agentId,
      leads: [{ phone: kept }, { phone: barred }],
    });
    expect(await launch(firm.client, created.id)).toBe(2);
    const jobs = await eventually(async () => {
      const found = await Promise.all(
        [kept, barred].map((p) => stack.services.queues.campaigns.getJob(jobId('cc', created.id, p, '1'))),
      );
      for (const job of found) expect(await job?.getState()).toBe('delayed');
      return found;
    });
    await putOnDnc(firm.slug, barred);
    clock.set(nyAt(10 * 60));
    for (const job of jobs) await job!.promote();
    const campaign = await waitForCampaign(
      firm.client,
      created.id,
      (c) => c.calls_completed + c.calls_failed === 2,
    );
    expect(campaign).toMatchObject({ calls_completed: 1, calls_failed: 1 });
    expect((await simulatorDials(stack, [kept, barred])).map((d) => d.to_number)).toEqual([kept]);
    const barredDecisions = await decisionsOf(firm.slug, barred);
    expect(barredDecisions.map((d) => [d.stage, d.answer, d.reason, d.campaign_id])).toEqual([
      ['request', 'defer', 'hours', created.id],
      ['request', 'block', 'dnc', created.id],
    ]);
  });
});

describe('frequency caps', () => {
  it('a Florida number: the 4th attempt within 24 h across two campaigns and a direct call is refused as asked, deferred when_allowed, then made once the first ages out; the audit equals the attempts', async () => {
    const start = nyAt(10 * 60);
    clock.set(start);
    const firm = await firmWithAgent();
    const florida = phone('305'); // Miami
    const rows: string[][] = [];
    const note = (what: string, result: string) =>
      rows.push([new Date(clock.now()).toISOString(), what, result]);

    for (const name of ['Campaign A', 'Campaign B']) {
      const created = await createCampaign(firm.client, {
        name,
        firmSlug: firm.slug,
        agentId: firm.agentId,
        leads: [{ phone: florida }],
      });
      await launch(firm.client, created.id);
      await waitForCampaign(firm.client, created.id, (c) => c.calls_completed === 1);
      note(name, 'dialled');
      clock.shift(60_000);
    }
    const body = { firmSlug: firm.slug, agentId: firm.agentId, toNumber: florida };
    const third = await firm.client.post('/api/v2/create-outbound-call', body);
    expect(third.status, JSON.stringify(third.body)).toBe(200);
    await waitForCall(firm.client, third.body.call_id, (c) => c.status === 'ended');
    note('direct call', 'dialled');
    expect(await simulatorDials(stack, [florida])).toHaveLength(3);

    clock.shift(60_000);
    const first = (await decisionsOf(firm.slug, florida)).find((d) => d.stage === 'dial')!;
    const fourth = await firm.client.post('/api/v2/create-outbound-call', body);
    expect(fourth.status, JSON.stringify(fourth.body)).toBe(409);
    // A direct request over the cap is blocked, naming the rule (docs/compliance.md#frequency-caps), and says when the
    // number may be called again; with when_allowed it is deferred until then (below).
    expect(fourth.body.error.code).toBe('dial_blocked');
    expect(fourth.body.error.details[0].message).toMatch(/^frequency: /);
    expect(fourth.body.error.retry_at).toBe(new Date(first.at.getTime() + 86_400_000).toISOString());
    expect(fourth.body.error.message).toContain('"when_allowed": true');
    const refusal = (await decisionsOf(firm.slug, florida)).filter((d) => d.stage === 'request').at(-1)!;
    expect([refusal.answer, refusal.reason]).toEqual(['block', 'frequency']);
    note('4th attempt (direct)', `409 dial_blocked (frequency) until ${fourth.body.error.retry_at}`);

    const scheduled = await firm.client.post('/api/v2/create-outbound-call', { ...body, when_allowed: true });
    expect(scheduled.body.status).toBe('scheduled');
    expect(scheduled.body.call_id).toBeTruthy();
    note('4th attempt (when_allowed)', 'scheduled');
    // A minute before the first attempt ages out: still deferred at the dial stage. (The gate's
    // clock runs on while the job is promoted and judged: with a second to spare, a full run on a
    // busy machine reached the boundary first, and the call was dialled.)
    clock.set(first.at.getTime() + 86_400_000 - 60_000);
    await promoteDeferred(scheduled.body.call_id);
    await promoteDeferred(scheduled.body.call_id);
    expect(clock.now()).toBeLessThan(first.at.getTime() + 86_400_000);
    expect(await simulatorDials(stack, [florida])).toHaveLength(3);
    note('4th attempt, 1 min before the first ages out', 'deferred again');
    clock.set(first.at.getTime() + 86_400_000);
    await promotePlaceCall(scheduled.body.call_id);
    await waitForCall(firm.client, scheduled.body.call_id, (c) => c.status === 'ended');
    note('4th attempt, when the first has aged out', 'dialled');
    console.table(rows.map(([at, what, result]) => ({ at, what, result })));

    // The audit equals the attempts one to one: a dial-stage `allow` per simulator dial.
    const dials = await simulatorDials(stack, [florida]);
    const allowed = (await decisionsOf(firm.slug, florida)).filter(
      (d) => d.stage === 'dial' && d.answer === 'allow',
    );
    expect(dials).toHaveLength(4);
    expect(allowed.map((d) => d.call_id).sort()).toEqual(dials.map((d) => d.metadata.call_id).sort());
    expect(allowed.map((d) => d.attempts)).toEqual([1, 2, 3, 3]);
  });

  it('after Redis lost its data, the attempts are rebuilt from the dial decisions: a 4th attempt within 24 h is still deferred at its dial and refused at its request', async () => {
    const start = nyAt(10 * 60);
    clock.set(start);
    const firm = await firmWithAgent();
    const number = phone();
    const body = { firmSlug: firm.slug, agentId: firm.agentId, toNumber: number };
    for (let i = 0; i < 3; i++) {
      const made = await firm.client.post('/api/v2/create-outbound-call', body);
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      await waitForCall(firm.client, made.body.call_id, (c) => c.status === 'ended');
      clock.shift(60_000);
    }
    const scheduled = await firm.client.post('/api/v2/create-outbound-call', { ...body, when_allowed: true });
    expect(scheduled.body.status).toBe('scheduled');
    const dialled = (await decisionsOf(firm.slug, number)).filter((d) => d.stage === 'dial');
    expect(dialled.map((d) => d.answer)).toEqual(['allow', 'allow', 'allow']);
    const keys = redisKeys(stack.config);
    /** What a Redis restarted without its data, or a new instance, holds of the firm: nothing. */
    const loseRedisData = () =>
      stack.services.redis.del(keys.dialAttempts(firm.slug, number), keys.dialAttemptsReady(firm.slug));

    // The dial stage: a minute before the first attempt ages out, the scheduled call is deferred.
    await loseRedisData();
    clock.set(dialled[0]!.at.getTime() + 86_400_000 - 60_000);
    await promoteDeferred(scheduled.body.call_id);
    expect(await simulatorDials(stack, [number])).toHaveLength(3);
    const deferral = (await decisionsOf(firm.slug, number)).at(-1)!;
    expect([deferral.call_id, deferral.stage, deferral.answer, deferral.reason]).toEqual([
      scheduled.body.call_id,
      'dial',
      'defer',
      'frequency',
    ]);

    // The request stage: a direct call is refused, naming the rule.
    await loseRedisData();
    const again = await firm.client.post('/api/v2/create-outbound-call', body);
    expect(again.status, JSON.stringify(again.body)).toBe(409);
    expect(again.body.error.details[0].message).toMatch(/^frequency: /);
    expect(await simulatorDials(stack, [number])).toHaveLength(3);

    // The firm's rebuild, asked for by the gate (at most every 5 s per process) and run by a
    // worker, marks its attempts complete; each refused request meanwhile asks again.
    await eventually(
      async () => {
        expect((await firm.client.post('/api/v2/create-outbound-call', body)).status).toBe(409);
        expect(await stack.services.redis.exists(keys.dialAttemptsReady(firm.slug))).toBe(1);
      },
      30_000,
      1000,
    );
    const members = await stack.services.redis.zrange(keys.dialAttempts(firm.slug, number), '0', '-1');
    expect(members.sort()).toEqual(dialled.map((d) => d.call_id).sort());
  });
});
