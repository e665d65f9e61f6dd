import type { Services } from '../../wiring/services.js';
import { enqueueBulk } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { CampaignCallJob } from '../../../jobs/campaigns.js';
import { finishLaunch } from './campaigns.js';
import { recordCampaignLaunched } from './record-campaign-events.js';
import { campaignFanoutsCollection, completeIfSettled, findCampaign } from './campaign-store.js';
import { phonePageCount, phonesFrom } from './campaign-phone-pages.js';
import { queuedAtLaunch } from './campaign-destinations.js';
import { updateById } from '../../platform/db/upsert.js';

// The launch's fan-out, in a worker: the campaign's phone pages (campaign-phone-pages.ts), read
// by _id a page ahead, added in chunks through addBulk as one campaign-call job per phone (job
// id = campaign + phone + attempt). The count of phones added so far (their position: the pages
// are frozen at launch) is checkpointed off the adds' path (Checkpoint, below), so a fan-out
// killed half-way resumes after it; the chunks added since the last write are added again, which
// BullMQ ignores for job ids it still knows and which creates no second call anyway (the call id
// derives from campaign + phone + attempt).

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
  // campaign.launched: the launch enqueued this job before its state change, so every launch
  // runs it after the change; a retry of it records nothing new.
  await recordCampaignLaunched(services, campaign);
  // Every lead settled before this job ran (a do-not-call sweep blocked them all): nothing to add.
  if (campaign.status === 'completed') return { outcome: 'completed', added: 0 };

  const fanouts = campaignFanoutsCollection(db);
  const progress = await fanouts.findOne({ _id: campaignId });
  let added = progress?.added ?? 0;
  if (progress?.done !== true) {
    const chunkSize = services.config.campaignFanoutChunk;
    const pageCount = await phonePageCount(db, campaign);
    let chunks = 0;
    const checkpoint = new Checkpoint((count, done) =>
      updateById(fanouts, campaignId, { $set: { added: count, done, updated_at: new Date() } }),
    );
    for await (const phones of phonesFrom(db, campaignId, pageCount, added)) {
      for (let i = 0; i < phones.length; i += chunkSize) {
        const chunk = phones.slice(i, i + chunkSize);
        // Each job's priority is its place in the campaign: jobs of several campaigns (and
        // firms) interleave instead of one campaign's thousands going first. Only the phones of
        // the destinations the firm allowed at launch are queued: calls_queued counted those.
        const jobs = chunk.flatMap((phone, j) =>
          queuedAtLaunch(campaign!.launch_destinations, phone)
            ? [
                {
                  data: { campaignId, firm: campaign!.firm, phone, attempt: 1 } satisfies CampaignCallJob,
                  priority: Math.min(added + j + 1, MAX_PRIORITY),
                },
              ]
            : [],
        );
        if (jobs.length > 0) await enqueueBulk(services.queues, JOBS.campaignCall, jobs);
        added += chunk.length;
        checkpoint.note(added);
        chunks += 1;
        if (
          chunks % STATE_CHECK_EVERY === 0 &&
          (await findCampaign(db, campaignId))?.status === 'cancelled'
        ) {
          await checkpoint.finish(added, false);
          return { outcome: 'cancelled', added };
        }
      }
    }
    await checkpoint.finish(added, true);
  }
  // A campaign with nothing to call is complete at once.
  if (campaign.calls_queued === 0) {
    await completeIfSettled(services, campaignId, { calls_placed: 0, calls_completed: 0, calls_failed: 0 });
  }
  return { outcome: 'fanned_out', added };
}

/**
 * The fan-out's checkpoint, written off the adds' path: one write at a time, each with the latest
 * count added, so a slow store (FerretDB rewrites the document) never holds up the next addBulk.
 * A count is noted only once its chunk was added, and writes follow one another: the checkpoint
 * never runs ahead of the jobs, it may only lag (a resumed fan-out adds those chunks again, which
 * BullMQ ignores for the job ids it still knows).
 */
class Checkpoint {
  private latest = 0;
  private written = 0;
  private writing: Promise<void> | null = null;
  private failure: unknown = undefined;

  constructor(private readonly save: (added: number, done: boolean) => Promise<unknown>) {}

  /** `added` phones have their job: written now, or after the write in flight. */
  note(added: number): void {
    if (this.failure !== undefined) throw this.failure;
    this.latest = added;
    this.writing ??= this.drain()
      .catch((err: unknown) => {
        this.failure = err;
      })
      .finally(() => {
        this.writing = null;
      });
  }

  /** The last write, after any in flight: the count and whether the fan-out is done. */
  async finish(added: number, done: boolean): Promise<void> {
    await this.writing;
    if (this.failure !== undefined) throw this.failure;
    await this.save(added, done);
  }

  private async drain(): Promise<void> {
    while (this.written < this.latest) {
      const count = this.latest;
      await this.save(count, false);
      this.written = count;
    }
  }
}
