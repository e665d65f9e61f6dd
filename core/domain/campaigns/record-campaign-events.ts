import type { Services } from '../../wiring/services.js';
import { eventIdOf, eventsCollection, recordEvent } from '../events/record-event.js';
import type { EventInput } from '../events/event-types.js';
import type { CampaignDoc } from './campaign-store.js';
import { viewWithCounts } from './campaign-view.js';

// The campaign.* domain events (docs/events.md#event-types): launched and completed once each
// (their keys), a pause per pause (keyed by its time: a manual pause or the kill switch's).
// campaign.launched is the first of them: a pause or the completion that comes before the
// launch's fan-out job has recorded it (a pause answered at once, a do-not-call sweep that
// settles every lead first) records it before itself, so that an endpoint, which gets one
// campaign's events in the order they were recorded, never hears of an end before the launch.

/** The campaign.launched of `campaign` (its record as launched: running, not paused). */
async function launchedEvent(services: Services, campaign: CampaignDoc): Promise<EventInput> {
  return {
    firm: campaign.firm,
    type: 'campaign.launched',
    subject: campaign._id,
    key: 'launched',
    occurred_at: campaign.launched_at!,
    data: await viewWithCounts(services, { ...campaign, status: 'running', paused_reason: null }),
  };
}

/** campaign.launched, by the launch's fan-out job as it starts (the launch's own continuation). */
export async function recordCampaignLaunched(services: Services, campaign: CampaignDoc): Promise<void> {
  if (campaign.launched_at === null) return;
  await recordEvent(services, await launchedEvent(services, campaign));
}

/** campaign.launched unless it is recorded already (one read by _id): before a later campaign.* event. */
async function launchedFirst(services: Services, campaign: CampaignDoc): Promise<void> {
  if (campaign.launched_at === null) return;
  const id = eventIdOf({
    firm: campaign.firm,
    type: 'campaign.launched',
    subject: campaign._id,
    key: 'launched',
  });
  const recorded = await eventsCollection(services.mongo.db).findOne({ _id: id }, { projection: { _id: 1 } });
  if (recorded === null) await recordEvent(services, await launchedEvent(services, campaign));
}

/** campaign.paused: `campaign` as the pause left it (its paused_reason says why and when). */
export async function recordCampaignPaused(services: Services, campaign: CampaignDoc): Promise<void> {
  const at = campaign.paused_reason?.at;
  if (campaign.status !== 'paused' || at === undefined) return;
  await launchedFirst(services, campaign);
  await recordEvent(services, {
    firm: campaign.firm,
    type: 'campaign.paused',
    subject: campaign._id,
    key: `paused|${at.toISOString()}`,
    occurred_at: at,
    data: await viewWithCounts(services, campaign),
  });
}

/** campaign.completed: every lead settled (not a cancel). */
export async function recordCampaignCompleted(services: Services, campaign: CampaignDoc): Promise<void> {
  if (campaign.status !== 'completed') return;
  await launchedFirst(services, campaign);
  await recordEvent(services, {
    firm: campaign.firm,
    type: 'campaign.completed',
    subject: campaign._id,
    key: 'completed',
    occurred_at: campaign.finished_at ?? campaign.updated_at,
    data: await viewWithCounts(services, campaign),
  });
}
