// The writers of one lead take turns (core/domain/leads/lead-lock.ts): a workflow's update_lead
// step, a booking event moving the lead's appointment, a re-analysis's caller fields. FerretDB
// writes a whole document for any update, and update_lead adds its tags to those the lead holds:
// a step that wrote from the lead as read when it began lost the tags another workflow's step had
// added meanwhile (on MongoDB too), and a booking event at the same moment could lose its
// appointment or the step its tags.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachAppointment, followBookingEvent } from '../../core/domain/appointments/lead-appointment.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { leadLockKey } from '../../core/domain/leads/lead-lock.js';
import { ensureSubjectLead, findLead, subjectLeadId } from '../../core/domain/leads/leads.js';
import { ACTIONS } from '../../core/domain/workflows/runs/actions.js';
import type { WorkflowStepDoc } from '../../core/domain/workflows/runs/run-store.js';
import { holdLock, landsWithin } from '../helpers/held-lock.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

const START = '2026-12-04T16:00:00.000Z';

/** A call's lead; with `bookedFirst`, the agent booked that booking during the call, before it. */
async function leadOfACall(callId: string, bookedFirst?: string) {
  const firm = await createFirm(stack);
  const db = stack.services.mongo.db;
  if (bookedFirst !== undefined) {
    await attachAppointment(stack.services, firm.slug, subjectLeadId('call', callId), {
      booking_uid: bookedFirst,
      start: START,
      status: 'booked',
    });
  }
  const lead = await ensureSubjectLead(
    db,
    { source: 'call', id: callId, firm: firm.slug },
    { first_name: 'Sam', phone: '+14155550166', email: `${callId}@example.com` },
  );
  const firmDoc = (await getFirm(db, firm.slug))!;
  /** Workflow `workflow`'s update_lead step `n`, begun on `seen` (the lead as the step read it). */
  const updateLead = (n: number, seen: typeof lead, would: Record<string, unknown>) => {
    const step = {
      _id: `wfs_${callId}_${n}`,
      started_at: new Date(),
      created_at: new Date(),
    } as unknown as WorkflowStepDoc;
    return ACTIONS.update_lead.perform({
      services: stack.services,
      firm: firmDoc,
      lead: seen,
      data: {},
      context: { workflow: { id: `wf_${n}` } },
      stepId: step._id,
      step,
      attempt: { lastAttempt: false },
      would: { lead_id: seen._id, ...would },
      signal: new AbortController().signal,
    });
  };
  return { firm, lead, updateLead };
}

describe('the writers of one lead', () => {
  it('two update_lead steps begun on the same lead: each adds its tags to those the lead holds when it writes', async () => {
    const { lead, updateLead } = await leadOfACall('call_two_steps');
    // Two workflows on the same event: both steps read the lead untagged.
    expect(lead.tags ?? []).toEqual([]);
    expect(await updateLead(1, lead, { add_tags: ['intake'] })).toMatchObject({
      state: 'done',
      result: { tags: ['intake'] },
    });
    expect(await updateLead(2, lead, { add_tags: ['urgent'], status: 'qualified' })).toMatchObject({
      state: 'done',
      result: { tags: ['intake', 'urgent'], workflow_status: 'qualified' },
    });
    const stored = await findLead(stack.services.mongo.db, lead._id);
    expect(stored?.tags).toEqual(['intake', 'urgent']);
    expect(stored?.workflow_status).toBe('qualified');
  });

  it('take turns under the lead’s lock: a booking event and an update_lead step wait while it is held, then both land', async () => {
    const { firm, lead, updateLead } = await leadOfACall('call_turns', 'bk_turns');
    const leadId = lead._id;
    const db = stack.services.mongo.db;
    expect(lead.appointment?.status).toBe('booked');
    const lock = await holdLock(stack.services.redis, leadLockKey(stack.services, firm.slug, leadId));
    const cancel = followBookingEvent(stack.services, {
      firm: firm.slug,
      trigger: 'BOOKING_CANCELLED',
      uid: 'bk_turns',
      start_at: Date.parse(START),
      event_at: Date.now(),
    });
    const tag = updateLead(3, lead, { add_tags: ['called'] });
    // Two seconds: far longer than either write takes when nothing holds the lead.
    expect(await landsWithin([cancel, tag], 2_000)).toBe('waiting');
    const during = await findLead(db, leadId);
    expect(during?.appointment?.status).toBe('booked');
    expect(during?.tags ?? []).toEqual([]);

    await lock.release();
    expect(await cancel).toEqual([leadId]);
    expect(await tag).toMatchObject({ state: 'done', result: { tags: ['called'] } });
    const after = await findLead(db, leadId);
    expect(after?.appointment).toEqual({ booking_uid: 'bk_turns', start: START, status: 'cancelled' });
    expect(after?.tags).toEqual(['called']);
  });
});
