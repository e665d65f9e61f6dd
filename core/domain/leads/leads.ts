import { findKnownClient, type KnownClient, type KnownClientReads } from '../contacts/known-clients.js';
import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import { claim } from '../../platform/db/claim.js';
import { collection, COLLECTIONS } from '../../platform/db/collections.js';
import { keysetPage } from '../../platform/db/keyset-cursor.js';
import { invalidRequest, type ErrorDetail } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { singleLine } from '../../platform/text.js';
import { isTimeZone } from '../../platform/time-zone.js';
import { normalizeEmail } from '../contact-points/emails.js';
import { toDialableE164, type CountryCode } from '../contact-points/phones.js';
import { copyAppointmentToNewLead, type LeadAppointment } from '../appointments/lead-appointment.js';
import { inquiryConsent, type Consent, type ConsentKind } from '../compliance/consent.js';

// Leads: the people a firm may call back or put in a campaign. They come from the API, from
// campaigns (inline leads), and from analysed calls and chats — exactly one per call or chat:
// such a lead's _id derives from the call or chat id, so creating it is a claim.

export const LEAD_SOURCES = ['call', 'chat', 'api', 'campaign'] as const;
export type LeadSource = (typeof LEAD_SOURCES)[number];
export const URGENCIES = ['low', 'normal', 'high', 'urgent'] as const;

export interface LeadDoc {
  _id: string;
  firm: string;
  source: LeadSource;
  call_id: string | null;
  chat_id: string | null;
  campaign_id: string | null;
  first_name: string | null;
  last_name: string | null;
  /** E.164, or null when none (or none valid) was given. */
  phone: string | null;
  /** Trimmed and lower-cased. */
  email: string | null;
  case_type: string | null;
  summary: string | null;
  urgency: string | null;
  notes: string | null;
  /** IANA time zone of the person (campaign calling windows); null: the firm's. */
  timezone: string | null;
  do_not_call: boolean;
  /**
   * What the person agreed to be called about (docs/compliance.md#consent); a lead of an inbound
   * call or chat has `inquiry` consent from its creation. Absent or null: none.
   */
  consent?: Consent | null;
  /** The appointment booked for this lead (docs/appointments.md#the-lead); absent: none. */
  appointment?: LeadAppointment;
  /**
   * The firm's client synced from Clio whose phone or email the lead has, as found when the lead
   * was created (core/domain/contacts/known-clients.ts); null or absent: none.
   */
  known_client?: KnownClient | null;
  /** Set by a workflow's `update_lead` step (docs/workflows.md); absent: none. */
  workflow_status?: string | null;
  /** Added by workflows' `update_lead` steps, each once; absent: none. */
  tags?: string[];
  created_at: Date;
}

/** What a client or a pipeline says about a lead, before normalisation. */
export interface LeadFields {
  first_name?: string | null;
  last_name?: string | null;
  phone?: string | null;
  email?: string | null;
  case_type?: string | null;
  summary?: string | null;
  urgency?: string | null;
  notes?: string | null;
  timezone?: string | null;
  do_not_call?: boolean;
  /** obtained_at as an ISO 8601 string (the API) or a Date. */
  consent?: ConsentInput | null;
}

export interface ConsentInput {
  kind: ConsentKind;
  text: string;
  obtained_at: string | Date;
  source: string;
  evidence_url?: string;
}

/** How far ahead of this server's clock a consent's obtained_at may be (the sender's clock). */
const CONSENT_CLOCK_SKEW_MS = 5 * 60_000;

export const leadsCollection = (db: Db) => collection<LeadDoc>(db, COLLECTIONS.leads);

const text = (value: string | null | undefined): string | null => {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? null : trimmed;
};

/**
 * A field that is one line (every field but notes): line breaks and control characters become
 * spaces, so caller text cannot forge lines wherever a lead is shown (docs/webhooks.md#caller-text).
 */
const line = (value: string | null | undefined): string | null =>
  text(value === null || value === undefined ? value : singleLine(value));

/**
 * The lead's fields normalised (phone in E.164, email lower-cased, time zone checked), with a
 * problem per field that cannot be: the API answers them as a 400, a pipeline keeps the rest.
 */
export function normaliseLeadFields(
  fields: LeadFields,
  defaultCountry: CountryCode = 'US',
): {
  fields: Omit<LeadDoc, '_id' | 'firm' | 'source' | 'call_id' | 'chat_id' | 'campaign_id' | 'created_at'>;
  problems: ErrorDetail[];
} {
  const problems: ErrorDetail[] = [];
  const rawPhone = text(fields.phone);
  // Any number the service may dial (a possible one), as create-outbound-call takes it.
  const phone = rawPhone === null ? null : toDialableE164(rawPhone, defaultCountry);
  if (rawPhone !== null && phone === null)
    problems.push({ path: '/phone', message: 'is not a valid phone number' });
  const rawEmail = text(fields.email);
  const email = rawEmail === null ? null : normalizeEmail(rawEmail);
  if (rawEmail !== null && email === null)
    problems.push({ path: '/email', message: 'is not a valid email address' });
  const timezone = text(fields.timezone);
  if (timezone !== null && !isTimeZone(timezone)) {
    problems.push({ path: '/timezone', message: 'is not an IANA time zone (such as America/Chicago)' });
  }
  let consent: Consent | null = null;
  if (fields.consent !== undefined && fields.consent !== null) {
    const c = fields.consent;
    const obtained = new Date(c.obtained_at);
    const consentText = c.text.trim();
    const source = singleLine(c.source).trim();
    const before = problems.length;
    if (Number.isNaN(obtained.getTime())) {
      problems.push({ path: '/consent/obtained_at', message: 'is not a date-time (ISO 8601)' });
    } else if (obtained.getTime() > Date.now() + CONSENT_CLOCK_SKEW_MS) {
      // A consent from the future would count as a fresh inquiry for longer than it is.
      problems.push({ path: '/consent/obtained_at', message: 'is in the future' });
    }
    if (consentText === '') problems.push({ path: '/consent/text', message: 'is blank' });
    if (source === '') problems.push({ path: '/consent/source', message: 'is blank' });
    if (problems.length === before) {
      consent = {
        kind: c.kind,
        text: consentText,
        obtained_at: obtained,
        source,
        ...(c.evidence_url === undefined ? {} : { evidence_url: c.evidence_url }),
      };
    }
  }
  return {
    fields: {
      first_name: line(fields.first_name),
      last_name: line(fields.last_name),
      phone,
      email,
      case_type: line(fields.case_type),
      summary: line(fields.summary),
      urgency: line(fields.urgency),
      notes: text(fields.notes),
      timezone: timezone !== null && isTimeZone(timezone) ? timezone : null,
      do_not_call: fields.do_not_call === true,
      consent,
    },
    problems,
  };
}

/** A new lead of source `api` (POST /api/leads), not yet stored; 400 when a field is not valid. */
export async function newApiLead(db: Db, firm: string, input: LeadFields): Promise<LeadDoc> {
  const { fields, problems } = normaliseLeadFields(input);
  if (problems.length > 0) throw invalidRequest('Some lead fields are not valid.', problems);
  const lead: LeadDoc = {
    _id: newId('lead'),
    firm,
    source: 'api',
    call_id: null,
    chat_id: null,
    campaign_id: null,
    ...fields,
    known_client: await findKnownClient(db, firm, fields),
    created_at: new Date(),
  };
  return lead;
}

/** The one lead of a call or chat: its id derives from the call or chat id. */
export function subjectLeadId(source: 'call' | 'chat', subjectId: string): string {
  const digest = createHash('sha256').update(`${source}|${subjectId}`).digest('base64url');
  return `lead_${source}_${digest.slice(0, 24)}`;
}

/**
 * The lead of an analysed call or chat, created at most once however often this runs
 * (a claim on its derived _id); returns the lead that exists. Fields that do not normalise
 * (an unparseable phone) are left empty rather than failing the pipeline. `knownClients`: the
 * job's contact-key reads, shared with its other steps (known-clients.ts).
 */
export async function ensureSubjectLead(
  db: Db,
  subject: {
    source: 'call' | 'chat';
    /** The call's or chat's _id, which the lead's _id derives from. */
    id: string;
    /** The id the lead's call_id or chat_id shows, when not `id` (an inbound call's shownCallId). */
    shownId?: string;
    firm: string;
    campaign_id?: string | null;
    /**
     * The person reached out (an inbound call, a chat): when, the time of the lead's inquiry
     * consent. Absent: no consent is recorded (a call the firm made is no inquiry).
     */
    inquiryAt?: Date;
  },
  input: LeadFields,
  options: { defaultCountry?: CountryCode; knownClients?: KnownClientReads } = {},
): Promise<LeadDoc> {
  const { fields } = normaliseLeadFields(input, options.defaultCountry ?? 'US');
  const lead: LeadDoc = {
    _id: subjectLeadId(subject.source, subject.id),
    firm: subject.firm,
    source: subject.source,
    call_id: subject.source === 'call' ? (subject.shownId ?? subject.id) : null,
    chat_id: subject.source === 'chat' ? (subject.shownId ?? subject.id) : null,
    campaign_id: subject.campaign_id ?? null,
    ...fields,
    // An inbound call or a chat is the person's inquiry; a campaign's own call is not.
    consent: subject.inquiryAt === undefined ? null : inquiryConsent(subject.source, subject.inquiryAt),
    known_client: await findKnownClient(db, subject.firm, fields, options.knownClients),
    created_at: new Date(),
  };
  if (await claim(leadsCollection(db), lead)) {
    // An agent may have booked before the lead existed (lead-appointment.ts: the second one copies).
    const appointment = await copyAppointmentToNewLead(db, lead._id);
    return appointment === null ? lead : { ...lead, appointment };
  }
  const existing = await leadsCollection(db).findOne({ _id: lead._id });
  if (existing === null) throw new Error(`lead ${lead._id} was claimed but cannot be read`);
  return existing;
}

/** One lead by id, whoever owns it; null when there is none (the route checks who may see it). */
export function findLead(db: Db, id: string): Promise<LeadDoc | null> {
  return leadsCollection(db).findOne({ _id: id });
}

/** A firm's leads, newest first (ties by id), by keyset: pages never repeat or skip a lead. */
export async function listLeads(
  db: Db,
  secret: string,
  firm: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ leads: LeadDoc[]; next_cursor: string }> {
  const order = { primary: { field: 'created_at', kind: 'date' as const }, tie: '_id' };
  const page = await keysetPage(
    leadsCollection(db),
    { secret, scope: 'list-leads', firm, order },
    { firm },
    limit,
    cursor,
  );
  return { leads: page.rows, next_cursor: page.next_cursor };
}
