import { ClioClient, CrmError, type ClioContact } from '../../integrations/crm/clio.js';
import { runEffect } from '../../platform/db/effect-recorder.js';
import type { Attempt, EffectOutcome, EffectSubject } from '../../platform/db/effect-records.js';
import { shorten } from '../../platform/text.js';
import { countryOf, nationalForms, toE164 } from '../contact-points/phones.js';
import type { CallExtraction } from '../calls/calls.js';
import { displayName, type CallerData } from '../intake/caller-data.js';
import type { NotifiedIntake } from './notifications.js';

// The CRM effect for Clio, in two recorded steps on the call or chat (crm_sync.contact, crm_sync.matter):
// 1. the contact: an existing Person is reused — first the firm's synced Clio contact holding the
//    caller's phone or email (its Clio id, read back to be sure it is still there), then Clio's
//    search: by the email, else (no email) by the phone in the forms a person types it, as
//    Clio's `query` finds only text as it was typed ("(212) 555-0142" is not found by
//    "+12125550142"); otherwise a Person is created. Its id is recorded before step 2 starts, so a retry
//    after a crash between the steps never creates a second contact.
// 2. the matter for that contact, with our call (or chat) id as Clio's client_reference; an attempt whose
//    outcome was lost (a crash, a 5xx, a timeout) first looks for a matter with that reference.

export interface CrmSyncResult {
  [key: string]: unknown;
  contact_id: number;
  contact_reused: boolean;
  matter_id: number;
}

const crmEffect = (path: string) => ({
  path,
  mayHaveHappened: (err: unknown) => !(err instanceof CrmError) || err.mayHaveHappened,
  isFinal: (err: unknown) => err instanceof CrmError && err.final,
});

/** The Clio id of the firm's synced contact holding the caller's phone or email, if any. */
export type SyncedClioId = () => Promise<number | null>;

/**
 * A Person already in Clio for this caller: the synced contact, else same email, else (no
 * email) same phone.
 */
export async function existingContact(
  client: ClioClient,
  data: Pick<CallExtraction, 'email' | 'phone'>,
  synced: SyncedClioId,
): Promise<ClioContact | null> {
  const id = await synced();
  if (id !== null) {
    const contact = await client.getContact(id);
    if (contact !== null) return contact;
  }
  if (data.email !== null) {
    const email = data.email;
    const found = await client.findContacts(email);
    return found.find((c) => c.emails.some((e) => e.trim().toLowerCase() === email)) ?? null;
  }
  if (data.phone !== null) {
    const phone = data.phone;
    const country = countryOf(phone);
    for (const form of nationalForms(phone)) {
      const found = await client.findContacts(form);
      const same = found.find((c) => c.phones.some((p) => toE164(p, country) === phone));
      if (same !== undefined) return same;
    }
  }
  return null;
}

/**
 * The Person's names: only those the caller gave (no invented data). Clio needs a
 * first or a last name, so a caller who gave none is filed under the phone (E.164), else the
 * email, as its last_name: what the firm would call them back on.
 */
export function personName(data: Pick<CallExtraction, 'first_name' | 'last_name' | 'email' | 'phone'>): {
  first_name: string | null;
  last_name: string | null;
} {
  const given = (name: string | null) => (name === null || name.trim() === '' ? null : name);
  const first = given(data.first_name);
  const last = given(data.last_name);
  if (first !== null || last !== null) return { first_name: first, last_name: last };
  return { first_name: null, last_name: data.phone ?? data.email };
}

/** The matter's description: the case, who, where the intake came from (a call, a web chat), and its summary. */
function matterDescription(data: CallerData, source: NotifiedIntake['kind']): string {
  const who = displayName(data) ?? data.phone ?? data.email ?? 'unknown caller';
  const from = source === 'call' ? 'intake call' : 'web chat';
  return shorten(`${data.case_type ?? 'New intake'} — ${who} (${from}): ${data.summary}`, 255);
}

/** Our id of the call or chat: the matter's client_reference. */
const referenceOf = (intake: NotifiedIntake): string =>
  intake.kind === 'call' ? intake.call._id : intake.chat.chat_id;

export async function syncToClio(
  client: ClioClient,
  subject: EffectSubject,
  intake: NotifiedIntake,
  data: CallerData,
  attempt: Attempt,
  synced: SyncedClioId = async () => null,
): Promise<CrmSyncResult> {
  type ContactResult = { contact_id: number; reused: boolean };
  const reference = referenceOf(intake);
  const contactFound = (contact: ClioContact, reused: boolean): EffectOutcome<ContactResult> => ({
    state: 'done',
    result: { contact_id: contact.id, reused },
  });
  const contact = await runEffect<ContactResult>(
    subject,
    {
      ...crmEffect('crm_sync.contact'),
      reconcile: async () => {
        const found = await existingContact(client, data, synced);
        return found === null ? null : contactFound(found, false);
      },
    },
    attempt,
    async () => {
      const found = await existingContact(client, data, synced);
      if (found !== null) return contactFound(found, true);
      const id = await client.createPerson({ ...personName(data), email: data.email, phone: data.phone });
      return { state: 'done', result: { contact_id: id, reused: false } };
    },
  );
  const contactId = contact.result!.contact_id;

  const matter = await runEffect<{ matter_id: number }>(
    subject,
    {
      ...crmEffect('crm_sync.matter'),
      reconcile: async () => {
        const id = await client.findMatterByReference(contactId, reference);
        return id === null ? null : { state: 'done', result: { matter_id: id } };
      },
    },
    attempt,
    async () => ({
      state: 'done',
      result: {
        matter_id: await client.createMatter({
          clientId: contactId,
          description: matterDescription(data, intake.kind),
          // An intake is not yet an engaged client: the firm opens the matter once it takes the case.
          status: 'pending',
          reference,
        }),
      },
    }),
  );
  return {
    contact_id: contactId,
    contact_reused: contact.result!.reused,
    matter_id: matter.result!.matter_id,
  };
}
