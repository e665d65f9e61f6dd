// A re-analysis (a later call_analyzed whose analysis differs) gives the call's lead the new caller
// data before get-call shows it: a client that polls get-call until caller_data changes, then
// reads the call's lead at once, finds the lead with the same data. The job's write of the lead
// is held back at the database (a relay in front of FerretDB), so the test sees what a client
// reading between the job's writes would see.
import { describe, expect, it } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { createFirm } from '../helpers/stack.js';
import { updateCommandOn } from '../helpers/tcp-relay.js';
import { useStackBehindMongoRelay } from '../helpers/mongo-relay-stack.js';
import { eventually } from '../helpers/eventually.js';
import { callWebhook, conversationCall, type RetellCaller } from '../fakes/retell-fixtures.js';
import { callForProvider, postSigned, settledCall } from '../webhooks/support.js';

const SECRET = 'whsec_reanalysis_reads';

const relayed = useStackBehindMongoRelay();

describe('a re-analysis, read through get-call and the leads routes', () => {
  it("the call's lead has the new caller data by the time get-call shows it", async () => {
    const firm = await createFirm(relayed.stack, { voice_webhook_secret: SECRET });
    const person: RetellCaller = {
      first_name: 'Maria',
      last_name: 'Lopez',
      phone: '+14155550171',
      email: 'maria.lopez@example.com',
      case_type: 'Personal Injury',
      summary: 'Rear-ended at a red light.',
    };
    const talked = conversationCall(person, { direction: 'inbound', fromNumber: person.phone });
    expect(
      (await postSigned(relayed.stack, firm.slug, SECRET, callWebhook('call_analyzed', talked))).status,
    ).toBe(200);
    const callId = (await callForProvider(relayed.stack, firm.slug, talked.call_id))._id;
    const first = await settledCall(firm.client, callId);
    expect(first.effects.lead).toBe('done');
    const leadOf = async () => {
      const res = await firm.client.get(`/api/leads/${first.lead_id}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    expect(await leadOf()).toMatchObject({ case_type: 'Personal Injury' });

    const revised = conversationCall(
      { ...person, case_type: 'Workers Compensation', summary: 'Injured at work, on the loading dock.' },
      { callId: talked.call_id, direction: 'inbound', fromNumber: person.phone },
    );
    // The re-analysis's write of the lead is held at the database.
    const held = relayed.relay.holdRequest(updateCommandOn(COLLECTIONS.leads));
    try {
      expect(
        (await postSigned(relayed.stack, firm.slug, SECRET, callWebhook('call_analyzed', revised))).status,
      ).toBe(200);
      await held.seen;
      // The lead has the old data still, and so does get-call.
      expect(await leadOf()).toMatchObject({ case_type: 'Personal Injury' });
      const meanwhile = await firm.client.get(`/api/v2/get-call/${talked.call_id}`);
      expect(meanwhile.body.caller_data.case_type).toBe('Personal Injury');
    } finally {
      held.release();
    }

    const shown = await eventually(async () => {
      const res = await firm.client.get(`/api/v2/get-call/${talked.call_id}`);
      expect(res.body.caller_data.case_type).toBe('Workers Compensation');
      return res.body;
    });
    expect(shown.lead_id).toBe(first.lead_id);
    // At once, with no wait: the lead has what get-call shows.
    expect(await leadOf()).toMatchObject({
      case_type: 'Workers Compensation',
      summary: shown.caller_data.summary,
    });
  });
});
