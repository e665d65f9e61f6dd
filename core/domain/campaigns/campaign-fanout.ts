import type { Services } from '../../wiring/services.js';
import { enqueueBulk } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { CampaignCallJob } from '../../../jobs/campaigns.js';
import { finishLaunch } from './campaigns.js';
import {
  campaignFanoutsCollection,
  campaignPhonesCollection,
  completeIfSettled,
  findCampaign,
  type CampaignPhoneDoc,
} from './campaign-store.js';

// The launch's fan-out, in a worker: ONE streaming cursor over the campaign's phones (one per
// distinct callable phone, in _id order), added in chunks through addBulk as one
// campaign-call job per phone (job id = campaign + phone + attempt). After each chunk the last
// phone's _id is checkpointed, so a fan-out killed half-way resumes after it; the chunk that was
// in flight is added again, which BullMQ ignores for job ids it still knows and which creates
// no second call anyway (the call id derives from campaign + phone + attempt).

/** BullMQ's largest priority. */
const MAX_PRIORITY = 2 ** 21 - 1;
/** How often (in chunks) the fan-out looks whether the campaign was cancelled meanwhile. */
const STATE_CHECK_EVERY = 10;

export async function fanOutCampaign(
  services: Services,
  campaignId: string,
): Promise<{ outcome: string; added: number }> {
  const db = services.mongo.db;
  let campaign = await findCampaign(db, campaignId);
  if (campaign === null) return { outcome: 'missing', added: 0 };
  if (campaign.status === 'draft') {
    campaign = await finishLaunch(services, campaignId);
    if (campaign === null) return { outcome: 'not_launched', added: 0 };
  }
  if (campaign.status === 'cancelled') return { outcome: 'cancelled', added: 0 };

  const fanouts = campaignFanoutsCollection(db);
  const progress = await fanouts.findOne({ _id: campaignId });
  let after = progress?.after ?? null;
  let added = progress?.added ?? 0;
  if (progress?.done !== true) {
    const chunkSize = services.config.campaignFanoutChunk;
    const cursor = campaignPhonesCollection(db)
      .find(
        { campaign_id: campaignId, ...(after === null ? {} : { _id: { $gt: after } }) },
        { projection: { _id: 1, phone: 1 } },
      )
      .sort({ _id: 1 })
      .batchSize(chunkSize);
    let chunk: Array<Pick<CampaignPhoneDoc, '_id' | 'phone'>> = [];
    let chunks = 0;
    const flush = async (): Promise<void> => {
      // Each job's priority is its place in the campaign: jobs of several campaigns (and firms)
      // interleave instead of one campaign's thousands going first.
      await enqueueBulk(
        services.queues,
        JOBS.campaignCall,
        chunk.map((entry, i) => ({
          data: {
            campaignId,
            firm: campaign!.firm,
            phone: entry.phone,
            attempt: 1,
          } satisfies CampaignCallJob,
          priority: Math.min(added + i + 1, MAX_PRIORITY),
        })),
      );
      added += chunk.length;
      after = chunk[chunk.length - 1]!._id;
      chunk = [];
      await fanouts.updateOne(
        { _id: campaignId },
        { $set: { after, added, done: false, updated_at: new Date() } },
        { upsert: true },
      );
    };
    try {
      for await (const entry of cursor) {
        chunk.push(entry);
        if (chunk.length < chunkSize) continue;
        await flush();
        chunks += 1;
        if (
          chunks % STATE_CHECK_EVERY === 0 &&
          (await findCampaign(db, campaignId))?.status === 'cancelled'
        ) {
          return { outcome: 'cancelled', added };
        }
      }
      if (chunk.length > 0) await flush();
    } finally {
      await cursor.close().catch(() => undefined);
    }
    await fanouts.updateOne(
      { _id: campaignId },
      { $set: { after, added, done: true, updated_at: new Date() } },
      { upsert: true },
    );
  }
  // A campaign with nothing to call is complete at once.
  if (campaign.calls_queued === 0) {
    await completeIfSettled(services, campaignId, { calls_placed: 0, calls_completed: 0, calls_failed: 0 });
  }
  return { outcome: 'fanned_out', added };
}
