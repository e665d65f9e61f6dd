// What an analysed call's worker steps ask of MongoDB, counted by the driver's command monitoring
// (docs/performance.md, "The cost of one intake"): the lead and the CRM look up the caller's known
// client once between them, a finished call's hook runs to its end once per process, so the
// call_analyzed after a call_ended finds nothing to read or write, and reads no effects document
// (none can exist yet), and the extraction is stored in one write. The worker runs in this process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandStartedEvent, Db, Document } from 'mongodb';
import { createFirm, freshMongoUri, rand } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { runCallEffects } from '../../core/domain/call-analysis/call-effects.js';
import { analyseCall } from '../../core/domain/call-analysis/pipeline.js';
import { finishedHere, onCallFinished } from '../../core/domain/calls/call-finished.js';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { callsCollection, withCallEffects } from '../../core/domain/calls/calls.js';
import { callView } from '../../core/domain/calls/call-view.js';
import { storeExtraction } from '../../core/domain/call-analysis/extraction.js';
import {
  JANE,
  callForProvider,
  leadsOf,
  postSigned,
  queuesIdle,
  retellCallAnalyzed,
  settledCall,
  startPeerStack,
  stopPeerStack,
  storedCall,
  type PeerStack,
} from '../webhooks/support.js';

const SECRET = 'whsec_analysed_call_reads';

let peers: PeerStack;
let commands: { name: string; collection: string; command: Document }[] = [];

beforeAll(async () => {
  const uri = new URL(freshMongoUri());
  uri.searchParams.set('monitorCommands', 'true');
  peers = await startPeerStack({ MONGODB_URI: uri.toString() });
  // The test's own client (the web's services); the worker in this process has a client of its own.
  peers.stack.services.mongo.client.on('commandStarted', (e: CommandStartedEvent) => {
    const target: unknown = e.command[e.commandName];
    commands.push({
      name: e.commandName,
      collection: typeof target === 'string' ? target : '',
      command: e.command,
    });
  });
});
afterAll(() => stopPeerStack(peers));

/** An analysed call of a firm with every effect configured, its effects settled. */
async function analysedCall() {
  const { stack, clio, slack } = peers;
  const firm = await createFirm(stack, {
    voice_webhook_secret: SECRET,
    notification_emails: [`desk-${rand(3)}@firm.test`],
    slack_webhook_url: slack.webhookUrl(),
    crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
  });
  const body = retellCallAnalyzed({ caller: { ...JANE, email: `reads.${rand(3)}@example.com` } });
  expect((await postSigned(stack, firm.slug, SECRET, body)).body).toEqual({ received: true });
  const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
  const settled = await settledCall(firm.client, callId);
  expect(settled.effects).toEqual(ALL_DONE);
  await queuesIdle(stack);
  return { firm, callId, shownId: body.call.call_id };
}

const finds = (collection: string) =>
  commands.filter((c) => c.name === 'find' && c.collection === collection).map((c) => c.command.filter?._id);

const ALL_DONE = { lead: 'done', crm: 'done', email: 'done', team_chat: 'done' };

type StoredRecords = Record<string, { state: string; result: Record<string, unknown> | null }>;

/** The call's effects document as stored: its effects' records and the CRM's steps'. */
const effectsDocOf = (db: Db, callId: string) =>
  db
    .collection<{ _id: string; effects?: StoredRecords; crm_sync?: StoredRecords }>(COLLECTIONS.callEffects)
    .findOne({ _id: callId });

/**
 * An analysed call's effects run again from nothing, here, with the test's client: its records
 * and its lead removed, then the four effects together, as the analysis job runs them (the
 * commands they send logged from an empty log).
 */
async function effectsRunAgain() {
  const { stack } = peers;
  const { firm, callId } = await analysedCall();
  const db = stack.services.mongo.db;
  await db.collection<{ _id: string }>(COLLECTIONS.callEffects).deleteOne({ _id: callId });
  await leadsOf(stack).deleteMany({ firm: firm.slug });
  const { effects: _effects, crm_sync: _steps, ...call } = (await storedCall(stack, callId))!;
  commands = [];
  expect(await runCallEffects(stack.services, call, { lastAttempt: false })).toEqual(ALL_DONE);
  return { firm, callId, db };
}

describe("an analysed call's effects", () => {
  it('look up the known client once for the lead and the CRM: one read of each contact key', async () => {
    const { firm } = await effectsRunAgain();
    const keys = finds(COLLECTIONS.contactKeys);
    // The phone's key and the email's (no synced client holds either): each read once, not twice.
    expect(keys).toHaveLength(2);
    expect(new Set(keys).size).toBe(2);
    expect(keys.every((k) => typeof k === 'string' && k.startsWith(`${firm.slug}|`))).toBe(true);
  });

  it("read the call's effects document once for the four effects' first looks: the call's lock is handed on with it", async () => {
    const { callId, db } = await effectsRunAgain();
    // Six records (lead, crm, email, team_chat, the CRM's contact and matter), each read under
    // the call's lock before its mark: the four effects ask at once, and their holders hand the
    // lock on with the document as last read or written; the CRM's two steps come later, each
    // read again unless the lock was still handed on.
    const reads = finds(COLLECTIONS.callEffects);
    expect(reads.every((id) => id === callId)).toBe(true);
    expect(reads.length).toBeGreaterThanOrEqual(1);
    expect(reads.length).toBeLessThanOrEqual(3);
    // What was written is what the next holders were given: every record settled, as stored.
    const stored = await db
      .collection<{ _id: string; effects?: Record<string, { state: string }> }>(COLLECTIONS.callEffects)
      .findOne({ _id: callId });
    expect(Object.fromEntries(Object.entries(stored?.effects ?? {}).map(([k, v]) => [k, v.state]))).toEqual(
      ALL_DONE,
    );
  });

  it('are run by the analysis job from the effects document it read once for call.analyzed: no other read of it, their first marks in one write', async () => {
    const { stack } = peers;
    const { firm, callId } = await analysedCall();
    const db = stack.services.mongo.db;
    await db.collection<{ _id: string }>(COLLECTIONS.callEffects).deleteOne({ _id: callId });
    await leadsOf(stack).deleteMany({ firm: firm.slug });
    commands = [];
    expect(await analyseCall(stack.services, { firm: firm.slug, callId }, { lastAttempt: false })).toEqual({
      outcome: 'already_extracted',
      effects: ALL_DONE,
    });
    // The one read: call.analyzed's (a repeat its key refused) and the six records' first looks.
    expect(finds(COLLECTIONS.callEffects)).toEqual([callId]);
    // The mail's and Slack's marks from that read in one write (with the CRM's contact step's when
    // it asks in time), the matter's mark, and the settles left at the end: three or four writes.
    const updates = commands
      .filter((c) => c.name === 'update' && c.collection === COLLECTIONS.callEffects)
      .map((c) => Object.keys((c.command.updates as Array<{ u: { $set: Document } }>)[0]!.u.$set));
    expect(updates[0]).toEqual(expect.arrayContaining(['effects.email', 'effects.team_chat']));
    expect(updates.length).toBeGreaterThanOrEqual(3);
    expect(updates.length).toBeLessThanOrEqual(4);
    const stored = await effectsDocOf(db, callId);
    expect(Object.fromEntries(Object.entries(stored?.effects ?? {}).map(([k, v]) => [k, v.state]))).toEqual(
      ALL_DONE,
    );
    expect(stored?.crm_sync?.matter?.state).toBe('done');
  });

  it("write every settle with the effects' next write: five writes, not ten", async () => {
    const { callId, db } = await effectsRunAgain();
    // Ten records' writes one by one: the mail's and Slack's marks and settles, the CRM's contact
    // and matter marks and settles, the lead's and the CRM's settles. The four marks are written;
    // each settle goes with the next of them, and what is left in one write at the end (the mail's
    // and Slack's too: their answers were stored first, and stay until then).
    const updates = commands.filter((c) => c.name === 'update' && c.collection === COLLECTIONS.callEffects);
    expect(updates.length).toBeGreaterThanOrEqual(5);
    expect(updates.length).toBeLessThanOrEqual(6);
    // The answers stored first are let go once the records holding them are written.
    await eventually(
      async () =>
        expect(
          await db.collection(COLLECTIONS.effectLeases).countDocuments({
            _id: { $regex: `^${COLLECTIONS.calls}\\|${callId}\\|.*\\|outcome\\|` },
          } as Document),
        ).toBe(0),
      5_000,
      50,
    );
    // Every settle was written, with what the effect produced.
    const stored = await effectsDocOf(db, callId);
    expect(stored?.effects?.lead?.result?.lead_id).toEqual(expect.any(String));
    expect(stored?.effects?.crm?.result).toMatchObject({ provider: 'clio', matter_id: expect.any(Number) });
    expect(stored?.crm_sync?.contact?.state).toBe('done');
    expect(stored?.crm_sync?.matter?.state).toBe('done');
    expect(stored?.crm_sync?.matter?.result?.matter_id).toBe(stored?.effects?.crm?.result?.matter_id);
  });

  it('a settle carried and lost with its process: the next attempt finds the matter in Clio and creates nothing twice', async () => {
    const { stack, clio } = peers;
    const { callId } = await analysedCall();
    const db = stack.services.mongo.db;
    const effectsDoc = () => effectsDocOf(db, callId);
    const matterId = (await effectsDoc())?.crm_sync?.matter?.result?.matter_id;
    expect(matterId).toEqual(expect.any(Number));
    const matters = clio.matters.length;
    // What a process leaves that died after Clio answered the matter and before the settles it
    // carried (the matter's, the CRM's) were written: the matter as marked, its lease run out.
    await db.collection<{ _id: string }>(COLLECTIONS.callEffects).updateOne(
      { _id: callId },
      {
        $set: {
          'crm_sync.matter.state': 'running',
          'crm_sync.matter.result': null,
          'crm_sync.matter.lease_token': 'of-a-dead-attempt',
          'crm_sync.matter.lease_until': new Date(Date.now() - 60_000),
          'effects.crm.state': 'pending',
          'effects.crm.result': null,
        },
      },
    );
    const { effects: _effects, crm_sync: _steps, ...call } = (await storedCall(stack, callId))!;
    expect(await runCallEffects(stack.services, call, { lastAttempt: false })).toEqual(ALL_DONE);
    // Asked about, not created again: the same matter, recorded.
    expect(clio.matters.length).toBe(matters);
    const after = await effectsDoc();
    expect(after?.crm_sync?.matter).toMatchObject({ state: 'done', result: { matter_id: matterId } });
    expect(after?.effects?.crm).toMatchObject({ state: 'done', result: { matter_id: matterId } });
  });
});

describe("a finished call's hook", () => {
  it('runs to its end once per process: the same call again reads and writes nothing', async () => {
    const { stack } = peers;
    const { firm, callId, shownId } = await analysedCall();
    const call = (await callsCollection(stack.services.mongo.db).findOne({ _id: callId }))!;
    // The worker (in this process) finished the call's hook when call_analyzed ended it.
    commands = [];
    await onCallFinished(stack.services, call);
    expect(commands).toEqual([]);
    // A process that did not run it (its memo empty) runs it again and finds call.ended recorded,
    // reading no effects document: none can have run when call.ended is first recorded.
    finishedHere.clear();
    await onCallFinished(stack.services, call);
    expect(finds(COLLECTIONS.callEffects)).toEqual([]);
    const inserts = commands.filter((c) => c.name === 'insert' && c.collection === COLLECTIONS.events);
    expect(inserts).toHaveLength(1);
    const ended = await stack.services.mongo.db
      .collection(COLLECTIONS.events)
      .countDocuments({ firm: firm.slug, type: 'call.ended', subject: shownId });
    expect(ended).toBe(1);
    // And remembers it: once more, nothing.
    commands = [];
    await onCallFinished(stack.services, call);
    expect(commands).toEqual([]);
  });

  it('runs again for an opt-out it has not counted', async () => {
    const { stack } = peers;
    const { callId } = await analysedCall();
    const call = (await callsCollection(stack.services.mongo.db).findOne({ _id: callId }))!;
    commands = [];
    await onCallFinished(stack.services, call, { optedOut: true });
    // Ran again (call.ended offered once more, refused by its key), not remembered as done.
    expect(commands.filter((c) => c.name === 'insert' && c.collection === COLLECTIONS.events)).toHaveLength(
      1,
    );
    commands = [];
    await onCallFinished(stack.services, call, { optedOut: true });
    await onCallFinished(stack.services, call);
    expect(commands).toEqual([]);
  });

  it('is not remembered for a campaign call whose lead settles on the analysis still to come', async () => {
    const { stack } = peers;
    const { callId } = await analysedCall();
    const stored = (await callsCollection(stack.services.mongo.db).findOne({ _id: callId }))!;
    // As at its call_ended: a conversation, no analysis yet, of a campaign (which no longer exists).
    const call = { ...stored, campaign_id: `cmp_${rand(4)}`, call_analysis: null, _id: `${callId}-c` };
    const endedInserts = () =>
      commands.filter((c) => c.name === 'insert' && c.collection === COLLECTIONS.events).length;
    commands = [];
    await onCallFinished(stack.services, call);
    expect(endedInserts()).toBe(1);
    commands = [];
    await onCallFinished(stack.services, call);
    expect(endedInserts()).toBe(1);
  });
});

describe("the extraction's store", () => {
  /** An analysed call as stored, with its extraction taken away (or not), and the command log emptied. */
  async function callToStoreFor(keep: boolean) {
    const { stack } = peers;
    const { callId } = await analysedCall();
    const calls = callsCollection(stack.services.mongo.db);
    if (!keep) await calls.updateOne({ _id: callId }, { $unset: { extraction: '' } });
    const call = (await calls.findOne({ _id: callId }))!;
    commands = [];
    return { stack, calls, call };
  }
  const other = {
    first_name: 'Other',
    last_name: 'Writer',
    phone: '+14155550100',
    email: 'other.writer@example.com',
    case_type: null,
    summary: 'Another job extracted this first.',
    urgency: 'normal' as const,
    extractor: 'deterministic' as const,
    fallback_reason: null,
  };
  const callCommands = () => commands.filter((c) => c.collection === COLLECTIONS.calls).map((c) => c.name);

  it('is one write when the call has none: the filter is the check, no read first', async () => {
    const { stack, calls, call } = await callToStoreFor(false);
    const stored = await storeExtraction(stack.services, call, other);
    expect(stored.first_name).toBe('Other');
    expect(callCommands()).toEqual(['update']);
    expect((await calls.findOne({ _id: call._id }))?.extraction?.first_name).toBe('Other');
  });

  it("keeps the first writer's: a call that has one keeps it, and is told which", async () => {
    const { stack, calls, call } = await callToStoreFor(true);
    const first = call.extraction!;
    expect(first.first_name).not.toBe('Other');
    const stored = await storeExtraction(stack.services, call, other);
    expect(stored).toEqual(first);
    expect(callCommands()).toEqual(['update', 'find']);
    expect((await calls.findOne({ _id: call._id }))?.extraction).toEqual(first);
  });
});

describe("a call joined with its effects' records", () => {
  it('read before its analysis was stored, and joined with the records written after: read again, so its caller data goes with its lead', async () => {
    const { stack } = peers;
    const { firm, callId, shownId } = await analysedCall();
    const db = stack.services.mongo.db;
    const stored = (await callsCollection(db).findOne({ _id: callId }))!;
    expect(stored.extraction).toBeDefined();
    // get-call read the call just before the analysis stored its extraction; the effects then ran
    // and wrote their records, and get-call read those.
    const { extraction: _extraction, ...readEarly } = stored;
    commands = [];
    const joined = await withCallEffects(db, readEarly);
    const view = callView(joined);
    expect(view.effects).toEqual(ALL_DONE);
    expect(view.lead_id).toEqual(expect.any(String));
    expect(view.caller_data).toMatchObject({ first_name: JANE.first_name });
    expect(view.caller_data).toEqual(callView(stored).caller_data);
    // The call, read once more.
    expect(finds(COLLECTIONS.calls)).toEqual([callId]);
    // Read as it is now, the call is joined with one read, of the records alone.
    commands = [];
    expect(callView(await withCallEffects(db, stored))).toEqual(view);
    expect(finds(COLLECTIONS.calls)).toEqual([]);
    expect(finds(COLLECTIONS.callEffects)).toEqual([callId]);
    // And over the API.
    expect((await firm.client.get(`/api/v2/get-call/${shownId}`)).body).toMatchObject({
      lead_id: view.lead_id,
      caller_data: view.caller_data,
    });
  });
});
