import type { Db } from 'mongodb';
import {
  campaignFanoutsCollection,
  campaignPhonePagesCollection,
  campaignPhonesCollection,
  phonePageId,
  type CampaignDoc,
  type CampaignPhonePageDoc,
} from './campaign-store.js';
import { replaceById, updateById } from '../../platform/db/upsert.js';

// A campaign's callable phones as pages in the order they were added (`<campaign>#<n>`), each
// page knowing the position of its first phone. An add of leads writes them beside its phone
// claims (inside its batch, so a crash clean-up removes them with the claims); the launch freezes
// them; the fan-out reads them back by _id. On FerretDB a cursor over 50,000 claims is a table
// scan and an in-memory sort (5–13 k claims/s): the pages are a handful of point reads.

/** Phones per page: a page stays around 100 KB. */
export const PHONE_PAGE_SIZE = 5000;

/**
 * The pages for phones added now, after `campaign`'s `callable` phones in `phone_pages` pages;
 * inserted by the caller inside its batch.
 */
export function newPhonePages(
  campaign: CampaignDoc,
  batch: string,
  phones: string[],
): CampaignPhonePageDoc[] {
  const pages: CampaignPhonePageDoc[] = [];
  const firstPage = campaign.phone_pages ?? 0;
  for (let i = 0; i < phones.length; i += PHONE_PAGE_SIZE) {
    pages.push({
      _id: phonePageId(campaign._id, firstPage + pages.length),
      campaign_id: campaign._id,
      batch,
      first: campaign.callable + i,
      phones: phones.slice(i, i + PHONE_PAGE_SIZE),
    });
  }
  return pages;
}

/**
 * How many pages a launched campaign's phones are in. A campaign whose phones were added before
 * pages were kept gets them now, once, from its claims (one cursor in _id order: the order the
 * fan-out used then). Replacing by _id makes that safe to repeat after a crash; the count is
 * kept on the fan-out's checkpoint (the campaign document has other writers).
 */
export async function phonePageCount(db: Db, campaign: CampaignDoc): Promise<number> {
  if (campaign.phone_pages !== undefined) return campaign.phone_pages;
  const fanouts = campaignFanoutsCollection(db);
  const known = (await fanouts.findOne({ _id: campaign._id }))?.pages;
  if (known !== undefined) return known;
  const pages = campaignPhonePagesCollection(db);
  const cursor = campaignPhonesCollection(db)
    .find({ campaign_id: campaign._id }, { projection: { _id: 1, phone: 1 } })
    .sort({ _id: 1 })
    .batchSize(PHONE_PAGE_SIZE);
  let count = 0;
  let phones: string[] = [];
  const write = async (): Promise<void> => {
    const page: CampaignPhonePageDoc = {
      _id: phonePageId(campaign._id, count),
      campaign_id: campaign._id,
      batch: 'claims',
      first: count * PHONE_PAGE_SIZE,
      phones,
    };
    await replaceById(pages, page._id, page);
    count += 1;
    phones = [];
  };
  try {
    for await (const claim of cursor) {
      phones.push(claim.phone);
      if (phones.length === PHONE_PAGE_SIZE) await write();
    }
    if (phones.length > 0) await write();
  } finally {
    await cursor.close().catch(() => undefined);
  }
  // `added` (if an older fan-out left one) counts positions in this same order: it stands.
  await updateById(fanouts, campaign._id, { $set: { pages: count, updated_at: new Date() } });
  return count;
}

/**
 * The campaign's phones from position `from` on, a page at a time, each page read by _id while
 * the caller works on the one before.
 */
export async function* phonesFrom(
  db: Db,
  campaignId: string,
  pageCount: number,
  from: number,
): AsyncGenerator<string[]> {
  const pages = campaignPhonePagesCollection(db);
  const read = (n: number) => {
    const p = pages.findOne({ _id: phonePageId(campaignId, n) });
    // Read ahead: a failure is thrown where it is awaited, not reported as unhandled meanwhile.
    p.catch(() => undefined);
    return p;
  };
  let next = pageCount > 0 ? read(0) : null;
  for (let n = 0; n < pageCount; n++) {
    const page = await next!;
    next = n + 1 < pageCount ? read(n + 1) : null;
    if (page === null) throw new Error(`campaign ${campaignId} has no phone page ${n}`);
    const skip = Math.max(0, from - page.first);
    if (skip < page.phones.length) yield skip === 0 ? page.phones : page.phones.slice(skip);
  }
}
