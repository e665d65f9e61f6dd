// A call accepted to be dialled now whose dial the gate then defers (the callee's hours closed
// while it waited for a worker): it waits, and get-call says until when (`scheduled_for`), as for
// a call made to wait at its request (docs/calls.md#create-outbound-call).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialDecisionsCollection } from '../../core/domain/compliance/dial-decisions.js';
import { clock } from '../../core/platform/clock.js';
import { zonedTimeToUtc } from '../../core/platform/time-zone.js';
import { jobId } from '../../jobs/define.js';
import type { Workers } from '../../workers/runner.js';
import { createAgent } from '../calls/support.js';
import { simulatorDials } from '../campaigns/support.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, startInProcessWorkers, startStack, type Stack } from '../helpers/stack.js';

const ZONE = 'America/New_York';
/** June 17 or 18, 2026 (a Wednesday and a Thursday) in New York, at `hhmm` local time. */
const nyAt = (day: number, hhmm: number): number => zonedTimeToUtc({ year: 2026, month: 6, day }, hhmm, ZONE);

let stack: Stack;
let workers: Workers | undefined;

beforeAll(async () => {
  // No workers yet: the test chooses when the call's job is taken.
  stack = await startStack({
    env: { CALLING_HOURS: '08:00-21:00', DIAL_ATTEMPTS_PER_DAY: '3', COMPLIANCE_STATE_RULES: 'true' },
  });
});
afterAll(async () => {
  clock.reset();
  await workers?.stop();
  await stack?.stop();
});

describe('a direct call deferred at its dial', () => {
  it('waits until the callee’s hours open, and get-call shows scheduled_for', async () => {
    const firm = await createFirm(stack, { timezone: ZONE });
    const agentId = await createAgent(firm.client, firm.slug);
    const number = '+12125550177';

    clock.set(nyAt(17, 20 * 60 + 59)); // 20:59 in New York: allowed
    const made = await firm.client.post('/api/v2/create-outbound-call', {
      firmSlug: firm.slug,
      agentId,
      toNumber: number,
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    expect(made.body.status).toBe('registered');
    const callId = made.body.call_id as string;
    expect((await firm.client.get(`/api/v2/get-call/${callId}`)).body.scheduled_for).toBeUndefined();

    // The job is taken at 21:30: the dial stage defers it to 08:00 the next morning.
    clock.set(nyAt(17, 21 * 60 + 30));
    workers = startInProcessWorkers(stack, ['calls']);
    await eventually(async () => {
      const job = await stack.services.queues.calls.getJob(jobId(callId));
      expect(await job?.getState()).toBe('delayed');
    });
    const call = await firm.client.get(`/api/v2/get-call/${callId}`);
    expect(call.body).toMatchObject({ status: 'registered', scheduled_for: nyAt(18, 8 * 60) });
    expect(await simulatorDials(stack, [number])).toHaveLength(0);
    const decisions = await dialDecisionsCollection(stack.services.mongo.db)
      .find({ firm: firm.slug, phone: number })
      .toArray();
    expect(decisions.map((d) => [d.stage, d.answer, d.reason])).toEqual([['dial', 'defer', 'hours']]);
  });
});
