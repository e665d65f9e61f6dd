import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { claim } from '../../platform/db/claim.js';
import { keysetPage } from '../../platform/db/keyset-cursor.js';
import { conflict } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { enqueue, enqueueRun } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { CampaignFanoutJob } from '../../../jobs/campaigns.js';
import { getFirmAgent } from '../agents/agents.js';
import { getFirm, type FirmDoc } from '../firms/firms.js';
import type { CampaignCounts } from './campaign-progress.js';
import type { RetryableOutcome } from './campaign-retry.js';
import { resetKillWindows } from './kill-switch-windows.js';
import {
  completeCount,
  countAllowed,
  launchDestinations,
  leavesOut,
  type LaunchDestinations,
} from './campaign-destinations.js';
import {
  cleanupUnfinishedAdd,
  notDraft,
  prepareCampaignLeads,
  writeCampaignLeads,
  type CampaignLeadsInput,
} from './campaign-leads.js';
import {
  campaignLaunchesCollection,
  campaignsCollection,
  countsOf,
  endCampaign,
  launchClaimId,
  type PausedReason,
  reread,
  withCampaignLock,
  type CampaignDoc,
} from './campaign-store.js';
import { recordCampaignPaused } from './record-campaign-events.js';

import type { CampaignPurpose } from '../compliance/consent.js';

// Campaigns (docs/campaigns.md): create with leads, add leads while draft, launch once, pause,
// resume, cancel. The launch flips draft → running behind a claim (`launch:<campaign>`), reads
// the callable count kept as leads were added, enqueues the fan-out and answers: its time does
// not depend on the number of leads. Workers do the rest (campaign-fanout.ts, campaign-calls.ts).

/** POST /api/leads/campaigns: a draft campaign of the firm's agent, with its first leads. */
export async function createCampaign(
  services: Services,
  firm: FirmDoc,
  input: CampaignLeadsInput & {
    name: string;
    agentId: string;
    retry_on?: RetryableOutcome[];
    skip_known_clients?: boolean;
    purpose?: CampaignPurpose;
  },
): Promise<CampaignDoc> {
  const db = services.mongo.db;
  const agent = await getFirmAgent(db, firm._id, input.agentId);
  const skipKnownClients = input.skip_known_clients === true;
  const prepared = await prepareCampaignLeads(db, firm, input, skipKnownClients);
  const now = new Date();
  const campaign: CampaignDoc = {
    _id: newId('cmp'),
    firm: firm._id,
    name: input.name,
    agent_id: agent._id,
    status: 'draft',
    ...(input.retry_on === undefined ? {} : { retry_on: [...new Set(input.retry_on)] }),
    leads_total: 0,
    callable: 0,
    callable_by_destination: {},
    phone_pages: 0,
    skip_known_clients: skipKnownClients,
    known_clients_skipped: 0,
    // The effective purpose is stored: an explicit one, else the platform's default (marketing).
    purpose: input.purpose ?? services.config.campaignDefaultPurpose,
    calls_queued: 0,
    open_batch: null,
    launched_at: null,
    finished_at: null,
    final_counts: null,
    created_at: now,
    updated_at: now,
  };
  await campaignsCollection(db).insertOne(campaign);
  try {
    const added = await writeCampaignLeads(services, campaign._id, firm, prepared, {
      takeBackOnFailure: true,
    });
    return { ...campaign, leads_total: added.leads_total };
  } catch (err) {
    // The leads were checked first, so this is an outage: leave no half-made campaign behind (the
    // add took back its own records).
    await campaignsCollection(db)
      .deleteOne({ _id: campaign._id })
      .catch((e: unknown) =>
        services.log.error({ err: e, campaign_id: campaign._id }, 'could not remove campaign'),
      );
    throw err;
  }
}

/** POST /api/leads/campaigns/{id}/leads: more leads, only while draft (409 campaign_not_draft). */
export async function addCampaignLeads(
  services: Services,
  campaign: CampaignDoc,
  input: CampaignLeadsInput,
): Promise<{ campaign: CampaignDoc; leads_added: number }> {
  const db = services.mongo.db;
  const campaignId = campaign._id;
  if (campaign.status !== 'draft') throw notDraft(campaign);
  const firm = await getFirm(db, campaign.firm);
  if (firm === null) throw notDraft(campaign);
  const prepared = await prepareCampaignLeads(db, firm, input, campaign.skip_known_clients === true);
  const added = await writeCampaignLeads(services, campaignId, firm, prepared);
  return { campaign: { ...campaign, leads_total: added.leads_total }, leads_added: added.leads_added };
}

const alreadyLaunched = (campaign: CampaignDoc) =>
  conflict(
    'campaign_already_launched',
    `The campaign was launched already (it is ${campaign.status}); a campaign is launched once.`,
  );

/**
 * What a launch queues: the phones of the destinations the firm allows now, with those
 * destinations when they leave some phone out (otherwise the fan-out queues every phone without
 * parsing each one again, and the do-not-call sweep has nothing to pass over). Every phone when
 * the campaign's count by destination does not hold them all (an older release's add kept none).
 */
async function launchCount(
  db: Db,
  campaign: CampaignDoc,
): Promise<{ calls_queued: number; launch_destinations?: LaunchDestinations }> {
  const byDestination = completeCount(campaign.callable_by_destination, campaign.callable);
  const firm = byDestination === undefined ? null : await getFirm(db, campaign.firm);
  if (byDestination === undefined || firm === null) return { calls_queued: campaign.callable };
  const allowed = launchDestinations(firm);
  return {
    calls_queued: countAllowed(byDestination, allowed),
    ...(leavesOut(byDestination, allowed) ? { launch_destinations: allowed } : {}),
  };
}

/**
 * The state change of a launch, as the campaign's writer: running, with its calls_queued — the
 * phones of the destinations the firm allows now (campaign-destinations.ts), kept for the fan-out.
 */
async function markRunning(db: Db, campaign: CampaignDoc, launchedAt: Date): Promise<CampaignDoc> {
  const changes = {
    status: 'running' as const,
    launched_at: launchedAt,
    ...(await launchCount(db, campaign)),
    updated_at: new Date(),
  };
  await campaignsCollection(db).updateOne({ _id: campaign._id }, { $set: changes });
  return { ...campaign, ...changes };
}

/**
 * POST /api/leads/campaigns/{id}/launch. As the campaign's writer: the launch claim (a second
 * launch, however concurrent, finds the campaign running or the claim taken: 409
 * campaign_already_launched), the fan-out job, then draft → running. A launch that died after
 * its claim (the campaign still draft, under the lock) is finished by the next launch or by the
 * fan-out job. If the fan-out cannot be enqueued, the claim is withdrawn: a 503 changes nothing
 * (a fan-out job that reached Redis all the same finds no launch and ends; the retry runs it again).
 */
export async function launchCampaign(
  services: Services,
  seen: CampaignDoc,
): Promise<{ launched: true; calls_queued: number }> {
  const db = services.mongo.db;
  const campaignId = seen._id;
  if (seen.status !== 'draft') throw alreadyLaunched(seen);
  return withCampaignLock(services, campaignId, async () => {
    let campaign = await reread(db, campaignId);
    if (campaign.status !== 'draft') throw alreadyLaunched(campaign);
    const launchedAt = new Date();
    const claimed = await claim(campaignLaunchesCollection(db), {
      _id: launchClaimId(campaignId),
      launch_of: campaignId,
      created_at: launchedAt,
    });
    // The launch's own fan-out job: a launch that claimed and died before its state change may
    // have added it already (it then finishes that launch, or this one's add finds it).
    const fanout = claimed
      ? { campaignId, firm: campaign.firm, launch: String(launchedAt.getTime()) }
      : ((await launchFanoutJob(db, campaignId, campaign.firm)) ?? { campaignId, firm: campaign.firm });
    campaign = await cleanupUnfinishedAdd(db, campaign);
    try {
      // An earlier launch answered 503 whose fan-out job reached Redis all the same left that job
      // behind, to end "not launched": this launch's job has an id of its own (the launch's time),
      // so it is added even while that one still runs. enqueueRun, not a plain add: a job of this
      // launch that failed for good is run again.
      await enqueueRun(services.queues, JOBS.campaignFanout, fanout);
    } catch (err) {
      if (claimed) await campaignLaunchesCollection(db).deleteOne({ _id: launchClaimId(campaignId) });
      throw err;
    }
    const running = await markRunning(db, campaign, launchedAt);
    return { launched: true as const, calls_queued: running.calls_queued };
  });
}

/** The fan-out job of the campaign's launch (named by its claim's time); null before any launch. */
export async function launchFanoutJob(
  db: Db,
  campaignId: string,
  firm: string,
): Promise<CampaignFanoutJob | null> {
  const launch = await campaignLaunchesCollection(db).findOne({ _id: launchClaimId(campaignId) });
  return launch === null ? null : { campaignId, firm, launch: String(launch.created_at.getTime()) };
}

/**
 * For the fan-out job of a campaign still draft: a launch claimed it and died before the state
 * change. Finishes that launch (as the campaign's writer); null when there was no launch (its
 * claim was withdrawn).
 */
export async function finishLaunch(services: Services, campaignId: string): Promise<CampaignDoc | null> {
  const db = services.mongo.db;
  return withCampaignLock(services, campaignId, async () => {
    let campaign = await reread(db, campaignId);
    if (campaign.status !== 'draft') return campaign;
    const launch = await campaignLaunchesCollection(db).findOne({ _id: launchClaimId(campaignId) });
    if (launch === null) return null;
    campaign = await cleanupUnfinishedAdd(db, campaign);
    return markRunning(db, campaign, launch.created_at);
  });
}

const notLaunched = () =>
  conflict('campaign_not_launched', 'The campaign is a draft: launch it first (or cancel it).');
const finished = (campaign: CampaignDoc) =>
  conflict('campaign_finished', `The campaign is ${campaign.status}; it cannot change any more.`);

/** Wakes the campaign's jobs that parked while it was paused (they look at its state again). */
async function wakeParked(services: Services, campaign: CampaignDoc): Promise<void> {
  await enqueue(services.queues, JOBS.campaignWake, {
    campaignId: campaign._id,
    firm: campaign.firm,
    at: Date.now(),
  });
}

/** A pause asked for by a request. */
const manualPause = (): PausedReason => ({
  code: 'manual',
  message: 'Paused by a request (POST /api/leads/campaigns/{id}/pause).',
  observed: null,
  threshold: null,
  at: new Date(),
});

/**
 * POST .../pause: running → paused; no new call is placed from now (calls in progress finish),
 * `paused_reason` says why. Pausing a paused campaign changes nothing. 409 campaign_not_launched
 * (draft), campaign_finished (completed or cancelled).
 *
 * The kill switch pauses through here too (`automatic`): only a running campaign, and only when
 * `automatic`, asked under the campaign's lock, still gives a reason (null: not now).
 */
export async function pauseCampaign(
  services: Services,
  seen: CampaignDoc,
  automatic?: (current: CampaignDoc) => Promise<PausedReason | null>,
): Promise<CampaignDoc> {
  const db = services.mongo.db;
  const campaignId = seen._id;
  return withCampaignLock(services, campaignId, async () => {
    const campaign = await reread(db, campaignId);
    if (automatic !== undefined && campaign.status !== 'running') {
      // Paused already: its event again (a no-op unless the pausing step died before it).
      await recordCampaignPaused(services, campaign);
      return campaign;
    }
    if (campaign.status === 'draft') throw notLaunched();
    if (campaign.status === 'completed' || campaign.status === 'cancelled') throw finished(campaign);
    if (campaign.status === 'paused') {
      // Its event again (its key: nothing new), for a pause whose step died before it.
      await recordCampaignPaused(services, campaign);
      return campaign;
    }
    const reason = automatic === undefined ? manualPause() : await automatic(campaign);
    if (reason === null) return campaign;
    const changes = {
      status: 'paused' as const,
      paused_reason: reason,
      ...(reason.pause === undefined ? {} : { auto_pauses: reason.pause }),
      updated_at: new Date(),
    };
    await campaignsCollection(db).updateOne({ _id: campaignId }, { $set: changes });
    const paused = { ...campaign, ...changes };
    // A manual pause or the kill switch's: campaign.paused, keyed by the pause's time.
    await recordCampaignPaused(services, paused);
    return paused;
  });
}

/**
 * POST .../resume: paused → running, `paused_reason` cleared, and the parked calls go on; after
 * a pause by the kill switch its windows start afresh. Resuming a running campaign changes
 * nothing (it wakes parked jobs again, harmlessly). 409 campaign_not_launched (draft),
 * campaign_finished (completed or cancelled).
 */
export async function resumeCampaign(services: Services, seen: CampaignDoc): Promise<CampaignDoc> {
  const db = services.mongo.db;
  const campaignId = seen._id;
  const campaign = await withCampaignLock(services, campaignId, async () => {
    const current = await reread(db, campaignId);
    if (current.status === 'draft') throw notLaunched();
    if (current.status === 'completed' || current.status === 'cancelled') throw finished(current);
    if (current.status === 'running') return current;
    // Emptied while still paused: no count taken before the resume can pause it again.
    if ((current.paused_reason?.code ?? 'manual') !== 'manual') await resetKillWindows(services, campaignId);
    const changes = { status: 'running' as const, paused_reason: null, updated_at: new Date() };
    await campaignsCollection(db).updateOne({ _id: campaignId }, { $set: changes });
    return { ...current, ...changes };
  });
  await wakeParked(services, campaign);
  return campaign;
}

/**
 * POST .../cancel: ends the campaign for good — no call is placed from now (calls in progress
 * finish), it cannot be launched or resumed. A draft can be cancelled (it is then never
 * launched); cancelling a cancelled campaign changes nothing. 409 campaign_finished (completed).
 */
export async function cancelCampaign(services: Services, seen: CampaignDoc): Promise<CampaignDoc> {
  const db = services.mongo.db;
  const campaignId = seen._id;
  const { campaign, wasLaunched } = await withCampaignLock(services, campaignId, async () => {
    const current = await reread(db, campaignId);
    if (current.status === 'completed') throw finished(current);
    if (current.status === 'cancelled')
      return { campaign: current, wasLaunched: current.launched_at !== null };
    if (current.status === 'draft') {
      // The launch claim too, so that no launch can follow.
      await claim(campaignLaunchesCollection(db), {
        _id: launchClaimId(campaignId),
        launch_of: campaignId,
        created_at: new Date(),
      });
    }
    return {
      campaign: await endCampaign(services, current, 'cancelled'),
      wasLaunched: current.status !== 'draft',
    };
  });
  if (wasLaunched) await wakeParked(services, campaign);
  return campaign;
}

/** A firm's campaigns, newest first (ties by id), by keyset: pages never repeat or skip one. */
export async function listCampaigns(
  services: Services,
  firm: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ campaigns: Array<{ campaign: CampaignDoc; counts: CampaignCounts }>; next_cursor: string }> {
  const order = { primary: { field: 'created_at', kind: 'date' as const }, tie: '_id' };
  const page = await keysetPage(
    campaignsCollection(services.mongo.db),
    { secret: services.config.sessionSecret, scope: 'list-campaigns', firm, order },
    { firm },
    limit,
    cursor,
  );
  const counts = await countsOf(services, page.rows);
  return {
    campaigns: page.rows.map((campaign, i) => ({ campaign, counts: counts[i]! })),
    next_cursor: page.next_cursor,
  };
}
