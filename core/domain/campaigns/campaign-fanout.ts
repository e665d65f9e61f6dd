import type { Services } from '../../wiring/services.js';
import { enqueueBulk } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { CampaignCallJob } from '../../../jobs/campaigns.js';
import { finishLaunch } from './campaigns.js';
import { campaignFanoutsCollection, completeIfSettled, findCampaign } from './campaign-store.js';
import { phonePageCount, phonesFrom } from './campaign-phone-pages.js';

// The launch's fan-out, in a worker: the campaign's phone pages (campaign-phone-pages.ts), read
// by _id a page ahead, added in chunks through addBulk as one campaign-call job per phone (job
// id = campaign + phone + attempt). After each chunk the count of phones added so far (their
// position: the pages are frozen at launch) is checkpointed, while the next chunk is being
// added, so a fan-out killed half-way resumes after it; the chunk that was in flight is added
// again, which BullMQ ignores for job ids it still knows and which creates no second call anyway
// (the call id derives from campaign + phone + attempt).

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
  let added = progress?.added ?? 0;
  if (progress?.done !== true) {
    const chunkSize = services.config.campaignFanoutChunk;
    const pageCount = await phonePageCount(db, campaign);
    let chunks = 0;
    // The previous chunk's checkpoint, written while this chunk is being added.
    let checkpoint: Promise<unknown> = Promise.resolve();
    const save = (done: boolean) => {
      const written = fanouts.updateOne(
        { _id: campaignId },
        { $set: { added, done, updated_at: new Date() } },
        { upsert: true },
      );
      // Awaited before the next one: a failure is thrown there, not reported as unhandled meanwhile.
      written.catch(() => undefined);
      return written;
    };
    for await (const phones of phonesFrom(db, campaignId, pageCount, added)) {
      for (let i = 0; i < phones.length; i += chunkSize) {
        const chunk = phones.slice(i, i + chunkSize);
        // Each job's priority is its place in the campaign: jobs of several campaigns (and
        // firms) interleave instead of one campaign's thousands going first.
        await enqueueBulk(
          services.queues,
          JOBS.campaignCall,
          chunk.map((phone, j) => ({
            data: { campaignId, firm: campaign!.firm, phone, attempt: 1 } satisfies CampaignCallJob,
            priority: Math.min(added + j + 1, MAX_PRIORITY),
          })),
        );
        await checkpoint;
        added += chunk.length;
        checkpoint = save(false);
        chunks += 1;
        if (
          chunks % STATE_CHECK_EVERY === 0 &&
          (await findCampaign(db, campaignId))?.status === 'cancelled'
        ) {
          await checkpoint;
          return { outcome: 'cancelled', added };
        }
      }
    }
    await checkpoint;
    await save(true);
  }
  // A campaign with nothing to call is complete at once.
  if (campaign.calls_queued === 0) {
    await completeIfSettled(services, campaignId, { calls_placed: 0, calls_completed: 0, calls_failed: 0 });
  }
  return { outcome: 'fanned_out', added };
}
