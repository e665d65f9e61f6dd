import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { conflict, notFound } from '../../platform/errors.js';
import { RecordBusyError, withRecordLock } from '../../platform/redis-mutex.js';
import {
  readCounts,
  readSkipped,
  retainCountsAfterEnd,
  type CampaignCounts,
  type SkippedByReason,
} from './campaign-progress.js';
import type { CampaignPurpose, Consent } from '../compliance/consent.js';
import type { RetryableOutcome } from './campaign-retry.js';
import type { LaunchDestinations } from './campaign-destinations.js';
import { recordCampaignCompleted } from './record-campaign-events.js';

// What a campaign is made of, in MongoDB, and how its writers take turns. Nothing here grows
// with the number of leads: membership is one small document per lead (`<campaign>:<lead>`),
// "one call per distinct phone" one document per phone (`<campaign>|<phone>`, the campaign's
// phone), and the launch one of its own (`launch:<campaign>`), each inserted as a claim
// (core/platform/db/claim.ts) — never an array of ids in the campaign document.

export const CAMPAIGN_STATUSES = ['draft', 'running', 'paused', 'completed', 'cancelled'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

/** A lead is called at most this many times: the first call and 2 retries after it reached nobody (retry_on). */
export const MAX_CALL_ATTEMPTS = 3;

export interface CampaignDoc {
  _id: string;
  firm: string;
  name: string;
  agent_id: string;
  status: CampaignStatus;
  /** The call outcomes its leads are called again after (absent: DEFAULT_RETRY_ON). */
  retry_on?: RetryableOutcome[];
  /** Leads in the campaign (each lead once). */
  leads_total: number;
  /**
   * Distinct phones added so far (each a page position). Without callable_by_destination (a
   * campaign made before it was kept): the phones callable when they joined, calls_queued at launch.
   */
  callable: number;
  /**
   * The same phones counted by destination (campaign-destinations.ts: the country, `:costly` for a
   * premium-rate or shared-cost number), every phone the service may dial somewhere: the launch
   * queues those of the destinations the firm allows when it launches.
   */
  callable_by_destination?: Record<string, number>;
  /** Set at launch with callable_by_destination: the destinations allowed then, which the fan-out queues. */
  launch_destinations?: LaunchDestinations;
  /**
   * Pages of phones written so far (CampaignPhonePageDoc `<campaign>#0` …). Absent on campaigns
   * whose phones were added before pages were kept: their fan-out pages the claims once.
   */
  phone_pages?: number;
  /**
   * Set at creation: leads that are the firm's known clients (docs/contacts.md#known-clients)
   * when they join are not called. Absent: false (campaigns made before it existed).
   */
  skip_known_clients?: boolean;
  /** Leads with a callable phone not called because they were known clients when they joined. */
  known_clients_skipped?: number;
  /**
   * Set at creation (docs/compliance.md#consent): a marketing campaign calls only leads with
   * written consent or a recent inquiry. Absent: marketing.
   */
  purpose?: CampaignPurpose;
  /** The skips by reason when the campaign ended (Redis keeps the live ones a while after). */
  final_skipped?: SkippedByReason;
  /** Set at launch (0 before). */
  calls_queued: number;
  /**
   * An add of leads that began and did not finish (its batch id): the process died during it.
   * The next writer removes what that add wrote before going on (cleanupOpenBatch).
   */
  open_batch: string | null;
  launched_at: Date | null;
  finished_at: Date | null;
  /**
   * Why the campaign is paused (a request, or the kill switch: docs/campaigns.md#kill-switch);
   * null or absent while it is not paused. Cleared by a resume; kept when a paused campaign is cancelled.
   */
  paused_reason?: PausedReason | null;
  /** How many times the kill switch paused it (its pauses are `<campaign>|pause|<n>`). */
  auto_pauses?: number;
  /** The counters when the campaign ended; Redis keeps the live ones only for a while after. */
  final_counts: CampaignCounts | null;
  created_at: Date;
  updated_at: Date;
}

export const PAUSE_CODES = ['manual', 'opt_out_rate', 'dial_failure_rate'] as const;
export type PauseCode = (typeof PAUSE_CODES)[number];

/** Why a campaign is paused: by a request (`manual`), or by the kill switch with what it saw. */
export interface PausedReason {
  code: PauseCode;
  message: string;
  /** What the kill switch counted in its window; null for a manual pause. */
  observed: { opt_outs: number; calls: number } | { dial_failures: number; dials: number } | null;
  /** The firm's threshold it exceeded (more than share × window); null for a manual pause. */
  threshold: { share: number; window: number } | null;
  /** The kill switch's pause number on the campaign (its notices' record); absent for a manual pause. */
  pause?: number;
  at: Date;
}

/** One lead of a campaign (`_id` = `<campaign>:<lead>`). */
export interface CampaignLeadDoc {
  _id: string;
  campaign_id: string;
  firm: string;
  lead_id: string;
  /** The add that wrote it. */
  batch: string;
  created_at: Date;
}

/**
 * A campaign's phone: one distinct callable phone (`_id` = `<campaign>|<phone>`): one call job,
 * one call per attempt. It carries what the call needs, so a dial reads one document.
 */
export interface CampaignPhoneDoc {
  _id: string;
  campaign_id: string;
  firm: string;
  batch: string;
  lead_id: string;
  /** E.164, possible, in an allowed country, not do-not-call when added. */
  phone: string;
  /** The lead's IANA time zone; null: the firm's. */
  timezone: string | null;
  /** Dynamic variables for the agent (the lead's names, case type). */
  variables: Record<string, string>;
  /** The lead's consent when it joined (the consent rule reads it); absent or null: none. */
  consent?: Consent | null;
  /**
   * Set when its queued call was blocked before its job came due (a number put on the firm's
   * do-not-call list: core/domain/compliance/dnc-sweep.ts): the job ends without a call, even if
   * the number is taken off the list meanwhile (the lead is settled already).
   */
  blocked?: CampaignPhoneBlock | null;
  created_at: Date;
}

export interface CampaignPhoneBlock {
  /** The gate's block reason (`dnc`, or `country` when that rule came first). */
  reason: string;
  /** The blocked call (its dial_decisions record is `<call_id>:request`) and its attempt. */
  call_id: string;
  attempt: number;
  at: Date;
}

/**
 * A page of a campaign's callable phones (`_id` = `<campaign>#<n>`), in the order they were
 * added: written with the phone claims by each add of leads, so the fan-out reads a 50,000-lead
 * campaign in a few point reads instead of 50,000 claims through a FerretDB scan and sort.
 */
export interface CampaignPhonePageDoc {
  _id: string;
  campaign_id: string;
  /** The add that wrote it (crash clean-up), or `claims` for a page made from older claims. */
  batch: string;
  /** The position of its first phone in the campaign (0-based): the fan-out's checkpoint counts positions. */
  first: number;
  phones: string[];
}

/** The launch's claim (`_id` = `launch:<campaign>`): a campaign is launched once. */
export interface CampaignLaunchDoc {
  _id: string;
  launch_of: string;
  created_at: Date;
}

/** A fan-out's checkpoint (`_id` = the campaign): how many phones (by position) have their job. */
export interface CampaignFanoutDoc {
  _id: string;
  added: number;
  /** Pages made from the claims of a campaign without phone_pages (its page count). */
  pages?: number;
  done: boolean;
  updated_at: Date;
}

export const campaignsCollection = (db: Db) => collection<CampaignDoc>(db, COLLECTIONS.campaigns);
export const campaignLeadsCollection = (db: Db) => collection<CampaignLeadDoc>(db, COLLECTIONS.campaignLeads);
export const campaignPhonesCollection = (db: Db) =>
  collection<CampaignPhoneDoc>(db, COLLECTIONS.campaignClaims);
export const campaignLaunchesCollection = (db: Db) =>
  collection<CampaignLaunchDoc>(db, COLLECTIONS.campaignClaims);
export const campaignPhonePagesCollection = (db: Db) =>
  collection<CampaignPhonePageDoc>(db, COLLECTIONS.campaignPhonePages);
export const campaignFanoutsCollection = (db: Db) =>
  collection<CampaignFanoutDoc>(db, COLLECTIONS.campaignFanouts);

export const campaignLeadId = (campaignId: string, leadId: string): string => `${campaignId}:${leadId}`;
export const campaignPhoneId = (campaignId: string, phone: string): string => `${campaignId}|${phone}`;
export const phonePageId = (campaignId: string, page: number): string => `${campaignId}#${page}`;
export const launchClaimId = (campaignId: string): string => `launch:${campaignId}`;

/** The call of a campaign's phone for one attempt: derived, so a repeated job finds the same call. */
export function campaignCallId(campaignId: string, phone: string, attempt: number): string {
  const digest = createHash('sha256')
    .update(`campaign|${campaignId}|${phone}|${attempt}`)
    .digest('base64url');
  return `call_${digest.slice(0, 24)}`;
}

/** The campaign by id, whoever owns it; null when there is none. */
export function findCampaign(db: Db, id: string): Promise<CampaignDoc | null> {
  return campaignsCollection(db).findOne({ _id: id });
}

/**
 * A campaign writer's lease: renewed every third of it while the writer works (an add of 5,000
 * leads takes seconds, longer on a loaded store), so a live writer keeps the campaign however
 * long it takes, and one that died (a crash mid-add) holds it no longer than this: a pause asked
 * for then waits at most this long, not minutes.
 */
export const CAMPAIGN_LOCK_TTL_MS = 30_000;

/**
 * Runs `fn` as the campaign's one writer: adds of leads, the launch, pause, resume, cancel and
 * completion take turns (FerretDB rewrites a whole document on update, so concurrent writers
 * could undo each other's fields). Waiting longer than `waitMs` is 409 campaign_busy.
 */
export async function withCampaignLock<T>(
  services: Services,
  campaignId: string,
  fn: () => Promise<T>,
  waitMs = 30_000,
): Promise<T> {
  try {
    return await withRecordLock(services.redis, redisKeys(services.config).campaignLock(campaignId), fn, {
      ttlMs: CAMPAIGN_LOCK_TTL_MS,
      waitMs,
      renew: true,
    });
  } catch (err) {
    if (err instanceof RecordBusyError) {
      throw conflict('campaign_busy', 'The campaign is being changed by another request; retry shortly.');
    }
    throw err;
  }
}

/** Reads the campaign inside its lock (it exists: it was read before the lock was taken). */
export async function reread(db: Db, id: string): Promise<CampaignDoc> {
  const campaign = await findCampaign(db, id);
  if (campaign === null) throw notFound('campaign');
  return campaign;
}

/** The Redis lot of the campaign's jobs parked while it is paused (core/domain/pacing/parking.ts). */
export const pausedLot = (services: Services, campaignId: string): string =>
  redisKeys(services.config).campaignParked(campaignId);

const ZERO_COUNTS: CampaignCounts = { calls_placed: 0, calls_completed: 0, calls_failed: 0 };

/** The campaign's counters now: live from Redis, else the copy kept when it ended. */
export async function countsOf(services: Services, campaigns: CampaignDoc[]): Promise<CampaignCounts[]> {
  const live = await readCounts(
    services,
    campaigns.map((c) => c._id),
  );
  return campaigns.map((c, i) => live[i] ?? c.final_counts ?? ZERO_COUNTS);
}

/**
 * Ends the campaign (completed or cancelled) as its writer: the end time and a copy of the
 * counters on the document; Redis keeps the live ones a while longer for late events.
 */
export async function endCampaign(
  services: Services,
  campaign: CampaignDoc,
  status: 'completed' | 'cancelled',
): Promise<CampaignDoc> {
  const now = new Date();
  const [[counts], skipped] = await Promise.all([
    countsOf(services, [campaign]),
    readSkipped(services, campaign._id),
  ]);
  const changes = {
    status,
    finished_at: now,
    final_counts: counts ?? ZERO_COUNTS,
    final_skipped: skipped,
    updated_at: now,
  };
  await campaignsCollection(services.mongo.db).updateOne({ _id: campaign._id }, { $set: changes });
  await retainCountsAfterEnd(services, campaign._id);
  return { ...campaign, ...changes };
}

/** A running (or paused) campaign whose leads are all settled becomes completed. */
export async function completeIfSettled(
  services: Services,
  campaignId: string,
  counts: CampaignCounts,
): Promise<void> {
  const db = services.mongo.db;
  const settled = (c: CampaignDoc) =>
    (c.status === 'running' || c.status === 'paused') &&
    counts.calls_completed + counts.calls_failed >= c.calls_queued;
  const campaign = await findCampaign(db, campaignId);
  // Completed already: campaign.completed again (its key: nothing new) heals a step that died
  // between the end and its event.
  if (campaign?.status === 'completed') await recordCampaignCompleted(services, campaign);
  if (campaign === null || !settled(campaign)) return;
  await withCampaignLock(services, campaignId, async () => {
    const current = await reread(db, campaignId);
    if (settled(current))
      await recordCampaignCompleted(services, await endCampaign(services, current, 'completed'));
  });
}
