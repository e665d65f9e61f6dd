import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS } from '../../platform/db/collections.js';
import { claimMany } from '../../platform/db/claim.js';
import { conflict, invalidRequest, type ErrorDetail } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { allowedDestination } from '../calls/calls.js';
import { findKnownClient, type KnownClient } from '../contacts/known-clients.js';
import type { FirmDoc } from '../firms/firms.js';
import { leadsCollection, normaliseLeadFields, type LeadDoc, type LeadFields } from '../leads/leads.js';
import {
  campaignLaunchesCollection,
  campaignLeadId,
  campaignLeadsCollection,
  campaignPhoneId,
  campaignPhonePagesCollection,
  campaignPhonesCollection,
  campaignsCollection,
  launchClaimId,
  reread,
  withCampaignLock,
  type CampaignDoc,
  type CampaignLeadDoc,
  type CampaignPhoneDoc,
} from './campaign-store.js';
import { newPhonePages } from './campaign-phone-pages.js';
import { destinationKey, dialableLeadPhone } from './campaign-destinations.js';
import { parseDialable } from '../contact-points/phones.js';
import { leadCreatedEventId, recordLeadsCreated } from '../leads/record-lead-events.js';
import { eventsCollection } from '../events/record-event.js';

// Adding leads to a draft campaign: inline leads (created as leads with source "campaign") and
// the firm's existing leads by id. Everything is checked before anything is written (a 400
// names each bad lead); then, as the campaign's one writer, the add claims its members and each
// new callable phone (`<campaign>|<phone>`, core/platform/db/claim.ts): the phones it adds are
// the calls the launch will queue, so the count is kept as leads come in and the launch reads
// one number.

/** Leads per request, inline and by id (each). */
export const MAX_LEADS_PER_REQUEST = 5000;
const WRITE_CHUNK = 1000;
/** Point reads (leads by id, known-client keys) in flight at once. */
const READ_CONCURRENCY = 16;

export interface CampaignLeadsInput {
  /** Inline leads; a `firmSlug` on one (as POST /api/leads takes it) must be the campaign's firm. */
  leads?: Array<LeadFields & { firmSlug?: string }>;
  leadIds?: string[];
}

/** A lead campaign leads are stored as: the add that wrote it is kept, for a crash's clean-up. */
type CampaignLeadRecord = LeadDoc & { campaign_batch?: string };

const leadRecords = (db: Db) => db.collection<CampaignLeadRecord>(COLLECTIONS.leads);

interface PreparedLeads {
  /** Inline leads, normalised, not yet stored (their ids are set at write time). */
  inline: Array<Omit<LeadDoc, '_id' | 'created_at' | 'campaign_id'>>;
  /** The firm's leads named by leadIds, each once. */
  existing: LeadDoc[];
  /**
   * With skip_known_clients: the known client of each existing lead, looked up now (a sync may
   * have run since the lead was created); inline leads carry theirs. Empty otherwise.
   */
  existingClients: Map<string, KnownClient>;
}

/** f on each item, at most READ_CONCURRENCY at once (point reads), results in order. */
async function inSlices<T, R>(items: T[], f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += READ_CONCURRENCY) {
    out.push(...(await Promise.all(items.slice(i, i + READ_CONCURRENCY).map(f))));
  }
  return out;
}

/**
 * Checks and resolves a request's leads before anything is written: a field that cannot be
 * normalised (email, time zone) or a leadId that is not a lead of the firm is a 400 naming each.
 * A phone that is no number the service may dial (not a possible one) is kept as none: the lead
 * joins, but is not called.
 */
export async function prepareCampaignLeads(
  db: Db,
  firm: FirmDoc,
  input: CampaignLeadsInput,
  skipKnownClients = false,
): Promise<PreparedLeads> {
  const problems: ErrorDetail[] = [];
  const normalisedInline = (input.leads ?? []).map(({ firmSlug, ...fields }, i) => {
    if (firmSlug !== undefined && firmSlug !== firm._id) {
      problems.push({ path: `/leads/${i}/firmSlug`, message: `is not the campaign's firm ${firm._id}` });
    }
    const normalised = normaliseLeadFields(fields);
    for (const p of normalised.problems) {
      if (p.path !== '/phone') problems.push({ path: `/leads/${i}${p.path}`, message: p.message });
    }
    return {
      firm: firm._id,
      source: 'campaign' as const,
      call_id: null,
      chat_id: null,
      ...normalised.fields,
    };
  });

  const ids = [...new Set(input.leadIds ?? [])];
  const found = new Map<string, LeadDoc>();
  for (let i = 0; i < ids.length; i += READ_CONCURRENCY) {
    const slice = ids.slice(i, i + READ_CONCURRENCY);
    // Point reads by _id (docs/operations.md#data-access-on-ferretdb-and-mongodb); the firm is checked on
    // each document.
    const docs = await Promise.all(slice.map((id) => leadsCollection(db).findOne({ _id: id })));
    docs.forEach((doc) => {
      if (doc !== null && doc.firm === firm._id) found.set(doc._id, doc);
    });
  }
  (input.leadIds ?? []).forEach((id, i) => {
    if (!found.has(id))
      problems.push({ path: `/leadIds/${i}`, message: `is not a lead of the firm ${firm._id}` });
  });

  if (problems.length > 0) {
    throw invalidRequest(
      `${problems.length} of the leads cannot be added; nothing was added. Correct them and send the request again.`,
      problems,
    );
  }
  // Marked as POST /api/leads marks a lead (docs/contacts.md#known-clients): at most two point
  // reads per phone or email, READ_CONCURRENCY at once; a request has at most
  // MAX_LEADS_PER_REQUEST inline leads.
  const clients = await inSlices(normalisedInline, (fields) => findKnownClient(db, firm._id, fields));
  const inline = normalisedInline.map((fields, i) => ({ ...fields, known_client: clients[i]! }));
  const existing = ids.map((id) => found.get(id)!);
  const existingClients = new Map<string, KnownClient>();
  if (skipKnownClients) {
    const current = await inSlices(existing, (lead) => findKnownClient(db, firm._id, lead));
    existing.forEach((lead, i) => {
      if (current[i]) existingClients.set(lead._id, current[i]);
    });
  }
  return { inline, existing, existingClients };
}

/** The phone a campaign may call for this lead: a destination the firm may dial, not do-not-call. */
function callablePhone(firm: FirmDoc, lead: Pick<LeadDoc, 'phone' | 'do_not_call'>): string | null {
  if (lead.do_not_call || lead.phone === null) return null;
  return allowedDestination(firm, lead.phone)?.e164 ?? null;
}

/** The campaign's phones by destination, with the phones this add claimed. */
function countedByDestination(
  before: Readonly<Record<string, number>>,
  phones: ReadonlyMap<string, CampaignPhoneDoc>,
  claimed: ReadonlySet<string>,
): Record<string, number> {
  const counts = { ...before };
  for (const doc of phones.values()) {
    if (!claimed.has(doc._id)) continue;
    const dialable = parseDialable(doc.phone);
    if (dialable === null) continue;
    const key = destinationKey(dialable);
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

/** A lead the campaign would call but does not: it skips known clients and this is one. */
function skippedAsClient(campaign: CampaignDoc, prepared: PreparedLeads, lead: LeadDoc): boolean {
  if (campaign.skip_known_clients !== true) return false;
  return (lead.known_client ?? null) !== null || prepared.existingClients.has(lead._id);
}

/** The agent's dynamic variables for a lead's call. */
function leadVariables(lead: LeadDoc): Record<string, string> {
  const vars: Record<string, string> = { lead_id: lead._id };
  if (lead.first_name !== null) vars.first_name = lead.first_name;
  if (lead.last_name !== null) vars.last_name = lead.last_name;
  const fullName = [lead.first_name, lead.last_name].filter((n) => n !== null).join(' ');
  if (fullName !== '') vars.full_name = fullName;
  if (lead.case_type !== null) vars.case_type = lead.case_type;
  return vars;
}

/** Removes what an unfinished add wrote (its members, phones and inline leads) and clears its mark. */
async function cleanupOpenBatch(db: Db, campaign: CampaignDoc): Promise<void> {
  const batch = campaign.open_batch;
  if (batch === null) return;
  await campaignPhonesCollection(db).deleteMany({ campaign_id: campaign._id, batch });
  await campaignLeadsCollection(db).deleteMany({ campaign_id: campaign._id, batch });
  await campaignPhonePagesCollection(db).deleteMany({ campaign_id: campaign._id, batch });
  await leadRecords(db).deleteMany({ campaign_id: campaign._id, campaign_batch: batch });
  await campaignsCollection(db).updateOne({ _id: campaign._id }, { $set: { open_batch: null } });
}

/** The campaign's writer makes sure an add that died half-way left nothing behind. */
export async function cleanupUnfinishedAdd(db: Db, campaign: CampaignDoc): Promise<CampaignDoc> {
  if (campaign.open_batch === null) return campaign;
  await cleanupOpenBatch(db, campaign);
  return { ...campaign, open_batch: null };
}

export const notDraft = (campaign: CampaignDoc) =>
  conflict(
    'campaign_not_draft',
    `The campaign is ${campaign.status}; leads can only be added to a draft campaign (before launch).`,
  );

/**
 * Adds prepared leads to a draft campaign as its one writer: returns how many leads joined
 * (a lead already in the campaign joins once) and the campaign's lead count after.
 * `takeBackOnFailure` (a campaign being created, which no one else writes yet): should the inline
 * leads' lead.created events fail to be recorded, what the add wrote is removed with the events
 * already stored, so the campaign's removal leaves no leads behind.
 */
export async function writeCampaignLeads(
  services: Services,
  campaignId: string,
  firm: FirmDoc,
  prepared: PreparedLeads,
  options: { takeBackOnFailure?: boolean } = {},
): Promise<{ leads_added: number; leads_total: number }> {
  const db = services.mongo.db;
  const written = await withCampaignLock(services, campaignId, async () => {
    let campaign = await reread(db, campaignId);
    const launched = await campaignLaunchesCollection(db).findOne({ _id: launchClaimId(campaignId) });
    if (campaign.status !== 'draft' || launched !== null) throw notDraft(campaign);
    campaign = await cleanupUnfinishedAdd(db, campaign);
    if (prepared.inline.length === 0 && prepared.existing.length === 0) {
      return { leads_added: 0, leads_total: campaign.leads_total, inline: [], batch: null };
    }

    const batch = newId('batch', 9);
    await campaignsCollection(db).updateOne({ _id: campaignId }, { $set: { open_batch: batch } });
    try {
      const now = new Date();
      const inline: CampaignLeadRecord[] = prepared.inline.map((fields) => ({
        _id: newId('lead'),
        ...fields,
        campaign_id: campaignId,
        created_at: now,
        campaign_batch: batch,
      }));
      for (let i = 0; i < inline.length; i += WRITE_CHUNK) {
        await leadRecords(db).insertMany(inline.slice(i, i + WRITE_CHUNK));
      }
      const leads: LeadDoc[] = [...inline, ...prepared.existing];
      const members: CampaignLeadDoc[] = leads.map((lead) => ({
        _id: campaignLeadId(campaignId, lead._id),
        campaign_id: campaignId,
        firm: firm._id,
        lead_id: lead._id,
        batch,
        created_at: now,
      }));
      const joined = await claimMany(campaignLeadsCollection(db), members);

      // One campaign phone per distinct phone among the leads that joined now: every number the
      // service may dial, counted by destination, so the launch queues those the firm allows
      // then (a campaign made before the count was kept: those callable now). A known client is
      // not called when the campaign skips them (counted instead, when callable now).
      const byDestination = campaign.callable_by_destination;
      const phones = new Map<string, CampaignPhoneDoc>();
      let skipped = 0;
      leads.forEach((lead, i) => {
        const member = joined.has(members[i]!._id);
        const phone = !member
          ? null
          : byDestination === undefined
            ? callablePhone(firm, lead)
            : (dialableLeadPhone(lead)?.e164 ?? null);
        if (phone !== null && skippedAsClient(campaign, prepared, lead)) {
          if (byDestination === undefined || callablePhone(firm, lead) !== null) skipped += 1;
          return;
        }
        if (phone === null || phones.has(phone)) return;
        phones.set(phone, {
          _id: campaignPhoneId(campaignId, phone),
          campaign_id: campaignId,
          firm: firm._id,
          batch,
          lead_id: lead._id,
          phone,
          timezone: lead.timezone,
          variables: leadVariables(lead),
          consent: lead.consent ?? null,
          created_at: now,
        });
      });
      const added = await claimMany(campaignPhonesCollection(db), [...phones.values()]);
      // The phones this add claimed, in the order of its leads, paged for the fan-out (unless
      // phones came before pages were kept: the fan-out pages all of its claims then).
      const paged = campaign.phone_pages !== undefined || campaign.callable === 0;
      const pages = paged
        ? newPhonePages(
            campaign,
            batch,
            [...phones.values()].filter((p) => added.has(p._id)).map((p) => p.phone),
          )
        : [];
      if (pages.length > 0) await campaignPhonePagesCollection(db).insertMany(pages);

      const leadsAdded = joined.size;
      const callableAdded = added.size;
      const destinations =
        byDestination === undefined ? undefined : countedByDestination(byDestination, phones, added);
      await campaignsCollection(db).updateOne(
        { _id: campaignId },
        {
          $set: {
            leads_total: campaign.leads_total + leadsAdded,
            callable: campaign.callable + callableAdded,
            ...(destinations === undefined ? {} : { callable_by_destination: destinations }),
            ...(paged ? { phone_pages: (campaign.phone_pages ?? 0) + pages.length } : {}),
            known_clients_skipped: (campaign.known_clients_skipped ?? 0) + skipped,
            open_batch: null,
            updated_at: new Date(),
          },
        },
      );
      return { leads_added: leadsAdded, leads_total: campaign.leads_total + leadsAdded, inline, batch };
    } catch (err) {
      await cleanupOpenBatch(db, { ...campaign, open_batch: batch }).catch((e: unknown) =>
        services.log.error(
          { err: e, campaign_id: campaignId, batch },
          'could not undo a failed add of leads',
        ),
      );
      throw err;
    }
  });
  // The inline leads are made: lead.created for each, once the add is whole.
  try {
    await recordLeadsCreated(services, written.inline);
  } catch (err) {
    if (options.takeBackOnFailure === true && written.batch !== null) {
      await takeBackAdd(services, campaignId, written.batch, written.inline).catch((e: unknown) =>
        services.log.error(
          { err: e, campaign_id: campaignId, batch: written.batch },
          'could not undo an add of leads whose events failed',
        ),
      );
    }
    throw err;
  }
  return { leads_added: written.leads_added, leads_total: written.leads_total };
}

/** How many stored events are removed at once (one point delete each). */
const TAKE_BACK_CONCURRENCY = 16;

/** Removes a whole add's records and the lead.created events its inline leads got. */
async function takeBackAdd(
  services: Services,
  campaignId: string,
  batch: string,
  inline: readonly LeadDoc[],
): Promise<void> {
  const db = services.mongo.db;
  const events = eventsCollection(db);
  for (let i = 0; i < inline.length; i += TAKE_BACK_CONCURRENCY) {
    await Promise.all(
      inline
        .slice(i, i + TAKE_BACK_CONCURRENCY)
        .map((lead) => events.deleteOne({ _id: leadCreatedEventId(lead) })),
    );
  }
  const campaign = await campaignsCollection(db).findOne({ _id: campaignId });
  if (campaign !== null) await cleanupOpenBatch(db, { ...campaign, open_batch: batch });
}
