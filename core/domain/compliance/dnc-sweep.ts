import { indexListed } from './dnc-index.js';
import type { Services } from '../../wiring/services.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { DncSweepJob } from '../../../jobs/compliance.js';
import { newId } from '../../platform/ids.js';
import { getFirm, type FirmDoc } from '../firms/firms.js';
import { callsCollection } from '../calls/calls.js';
import { callOutcome } from '../calls/call-outcome.js';
import { isRetriedOutcome } from '../campaigns/campaign-retry.js';
import {
  MAX_CALL_ATTEMPTS,
  campaignCallId,
  campaignPhoneId,
  campaignPhonesCollection,
  campaignsCollection,
  completeIfSettled,
  type CampaignDoc,
  type CampaignPhoneDoc,
} from '../campaigns/campaign-store.js';
import { phonesFrom } from '../campaigns/campaign-phone-pages.js';
import { queuedAtLaunch } from '../campaigns/campaign-destinations.js';
import { leadState, readCounts } from '../campaigns/campaign-progress.js';
import { settleRefusedLead } from '../campaigns/campaign-calls.js';
import { decideAtRequest } from './dial-gate.js';
import { findDncEntry } from './dnc-store.js';
import { dncEntryView } from './dnc-view.js';
import { recordEvent } from '../events/record-event.js';

// A do-not-call addition reaches queued calls (docs/compliance.md#queued-calls): the numbers
// just listed are looked up in each of the firm's running or paused campaigns, and each queued,
// not-yet-dialled call to one of them is blocked at once — its request-stage `block` decision
// recorded (`<call>:request`), its campaign phone marked `blocked`, the lead counted in
// skipped_by_reason and settled as failed, as the gate's own request-stage block does — instead
// of when its job comes due. Its job, when it runs, finds the mark and ends without a call; the
// dial stage's read of the list stays the backstop (a call registered meanwhile is blocked there).
//
// Reads stay point reads by _id. A campaign's phones are keyed `<campaign>|<phone>`: per campaign,
// either one point read per added number, or — when the campaign has fewer phone pages
// (`<campaign>#<n>`, 5,000 phones each) than numbers were added — its pages, intersected in
// memory. So 1,000 numbers against a campaign of 50,000 phones are 10 page reads, and one
// opt-out is one read per campaign. Nothing is written at launch or fan-out for this.
//
// Idempotent: the decision is a claim by _id, the mark a $set by _id, the skip a set member, the
// lead's state moves only forward. A retried job repeats what was done and skips leads settled.

/** Point reads and per-call blocks in flight at once. */
const CONCURRENCY = 16;

/**
 * What follows every addition to a firm's list (the API, the CSV import, an opt-out), after its
 * entries are written: the numbers into the gate's Redis index (dnc-index.ts), then the sweep of
 * the queued calls to them put in line, which also records dnc.added for the numbers this
 * addition listed (`listed`). Called with every number asked, listed before or not: a repeat
 * heals what an outage or a request that died half-way left undone (its events excepted: a number
 * listed already is no addition).
 */
export async function afterListing(
  services: Services,
  firm: string,
  phones: readonly string[],
  listed: readonly string[] = [],
): Promise<void> {
  const unique = [...new Set(phones)];
  if (unique.length === 0) return;
  await indexListed(services, firm, unique);
  await enqueue(services.queues, JOBS.dncSweep, {
    firm,
    phones: unique,
    batch: newId('dncsw', 9),
    ...(listed.length === 0 ? {} : { listed: [...new Set(listed)] }),
  });
}

/** f on each item, at most CONCURRENCY at once; results in order. */
async function inSlices<T, R>(items: readonly T[], f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += CONCURRENCY) {
    out.push(...(await Promise.all(items.slice(i, i + CONCURRENCY).map(f))));
  }
  return out;
}

export type SweptCall = 'blocked' | 'settled' | 'in_flight' | 'not_listed';

export interface SweepResult {
  campaigns: number;
  /** Campaign phones among the numbers (over all the firm's running and paused campaigns). */
  held: number;
  /** Queued calls blocked by this run. */
  blocked: number;
  /** Leads settled already (called, or blocked by an earlier run or by their own job). */
  settled: number;
  /** A call registered already: the dial stage's read of the list decides it. */
  in_flight: number;
}

type SweptCampaign = Pick<
  CampaignDoc,
  '_id' | 'phone_pages' | 'purpose' | 'status' | 'retry_on' | 'launch_destinations'
>;

/** The campaign phones of `campaign` among `phones`: by page when that is fewer reads. */
async function phonesHeld(
  services: Services,
  campaign: SweptCampaign,
  phones: readonly string[],
): Promise<CampaignPhoneDoc[]> {
  const db = services.mongo.db;
  let candidates: readonly string[] = phones;
  const pages = campaign.phone_pages;
  if (pages !== undefined && pages < phones.length) {
    const wanted = new Set(phones);
    const found: string[] = [];
    for await (const page of phonesFrom(db, campaign._id, pages, 0)) {
      for (const phone of page) if (wanted.has(phone)) found.push(phone);
    }
    candidates = found;
  }
  const docs = await inSlices(candidates, (phone) =>
    campaignPhonesCollection(db).findOne({ _id: campaignPhoneId(campaign._id, phone) }),
  );
  // A phone of a destination the launch did not allow was never queued: it has no call to block.
  return docs.filter(
    (doc): doc is CampaignPhoneDoc => doc !== null && queuedAtLaunch(campaign.launch_destinations, doc.phone),
  );
}

/**
 * The attempt whose call is queued: the first with no call record, after a finished call that
 * the campaign retries. `in_flight` when a call is registered and not finished (the dial stage
 * decides it) or has ended as a conversation whose analysis is not in (it may yet be told a
 * voicemail and retried: that retry's own job finds the number listed); null when no attempt
 * is queued (the last call's end settles the lead).
 */
async function queuedAttempt(
  services: Services,
  campaign: SweptCampaign,
  phone: string,
): Promise<number | 'in_flight' | null> {
  for (let attempt = 1; attempt <= MAX_CALL_ATTEMPTS; attempt++) {
    const call = await callsCollection(services.mongo.db).findOne({
      _id: campaignCallId(campaign._id, phone, attempt),
    });
    if (call === null) return attempt;
    if (!call.finished) return 'in_flight';
    if (callOutcome(call) === 'conversation' && call.call_analysis === null) return 'in_flight';
    if (!isRetriedOutcome(campaign, call)) return null;
  }
  return null;
}

/** Blocks the queued call of one campaign phone whose number is on the list. */
export async function blockQueuedCall(
  services: Services,
  firm: FirmDoc,
  campaign: SweptCampaign,
  doc: CampaignPhoneDoc,
): Promise<SweptCall> {
  const db = services.mongo.db;
  const state = await leadState(services, campaign._id, doc.phone);
  if (state === 'completed' || state === 'failed') return 'settled';
  if (doc.blocked !== undefined && doc.blocked !== null) {
    // Marked by an earlier run that died before settling the lead.
    await settleRefusedLead(services, campaign._id, doc.phone, doc.blocked.attempt, doc.blocked.reason);
    return 'blocked';
  }
  const attempt = await queuedAttempt(services, campaign, doc.phone);
  if (attempt === null) return 'settled';
  if (attempt === 'in_flight') return 'in_flight';
  // Read again: a number taken off the list since the addition stays callable.
  const entry = await findDncEntry(db, firm._id, doc.phone);
  if (entry === null) return 'not_listed';
  const callId = campaignCallId(campaign._id, doc.phone, attempt);
  // The gate's own request-stage path and record: on the list, its answer is a block (`dnc`, or
  // `country` if the firm no longer allows the number).
  const gate = await decideAtRequest(services, {
    firm,
    phone: doc.phone,
    leadTimeZone: doc.timezone,
    callId,
    campaignId: campaign._id,
    stage: 'request',
    dnc: Promise.resolve(entry),
    consent: { purpose: campaign.purpose ?? 'marketing', consent: doc.consent ?? null },
  });
  if (gate.decision.answer !== 'block') return 'not_listed';
  const reason = gate.record?.reason ?? gate.decision.reason;
  await campaignPhonesCollection(db).updateOne(
    { _id: doc._id },
    { $set: { blocked: { reason, call_id: callId, attempt, at: gate.record?.at ?? new Date() } } },
  );
  await settleRefusedLead(services, campaign._id, doc.phone, attempt, reason);
  return 'blocked';
}

/** The sweep of one addition: every queued call of the firm's campaigns to its numbers is blocked. */
export async function sweepQueuedCalls(services: Services, job: DncSweepJob): Promise<SweepResult> {
  const db = services.mongo.db;
  await recordDncAdditions(services, job);
  const result: SweepResult = { campaigns: 0, held: 0, blocked: 0, settled: 0, in_flight: 0 };
  const firm = await getFirm(db, job.firm);
  if (firm === null) return result;
  const phones = [...new Set(job.phones)];
  // The firm's running and paused campaigns (a few documents, their fields needed here only).
  const campaigns = await campaignsCollection(db)
    .find(
      { firm: firm._id, status: { $in: ['running', 'paused'] } },
      { projection: { _id: 1, phone_pages: 1, purpose: 1, status: 1, retry_on: 1, launch_destinations: 1 } },
    )
    .toArray();
  for (const campaign of campaigns) {
    result.campaigns += 1;
    const held = await phonesHeld(services, campaign, phones);
    result.held += held.length;
    const outcomes = await inSlices(held, (doc) => blockQueuedCall(services, firm, campaign, doc));
    for (const outcome of outcomes) {
      if (outcome === 'blocked') result.blocked += 1;
      else if (outcome === 'settled') result.settled += 1;
      else if (outcome === 'in_flight') result.in_flight += 1;
    }
    // The campaign completes if these were its last unsettled leads (one look per campaign).
    const [counts] = await readCounts(services, [campaign._id]);
    if (counts) await completeIfSettled(services, campaign._id, counts);
  }
  return result;
}

/**
 * dnc.added for each number the addition listed (docs/events.md#event-types), CONCURRENCY at once,
 * by the addition's own sweep job (enqueued before the addition answered; its retry records the
 * same events): subject the number, key the entry (the number and when it was listed: one event
 * per entry, whichever sweep records it, so a retried opt-out's second sweep records none), data
 * the entry (a number taken off the list meanwhile: none).
 */
async function recordDncAdditions(services: Services, job: DncSweepJob): Promise<void> {
  await inSlices(job.listed ?? [], async (phone) => {
    const entry = await findDncEntry(services.mongo.db, job.firm, phone);
    if (entry === null) return;
    await recordEvent(services, {
      firm: job.firm,
      type: 'dnc.added',
      subject: phone,
      key: `${phone}|${entry.added_at.getTime()}`,
      occurred_at: entry.added_at,
      data: dncEntryView(entry),
    });
  });
}
