import type PersonalContactResource from '@rc-ex/core/definitions/PersonalContactResource';

// A RingCentral address-book contact as a contacts import row (docs/ringcentral.md#contacts-sync).
// Pure: the sync stores exactly what POST /api/contacts/import would store for this row, so a test
// can import the same rows and compare the counts.

/** Where a synced contact came from (its `source`); its RingCentral contact id is its `external_id`. */
export const RINGCENTRAL_SOURCE = 'ringcentral';

/** The phone fields of a personal contact, in the order one is chosen. */
const PHONES = [
  'mobilePhone',
  'businessPhone',
  'homePhone',
  'businessPhone2',
  'homePhone2',
  'companyPhone',
  'callbackPhone',
  'otherPhone',
] as const;

/** Whether the record says the contact was removed (ISync answers deletions this way). */
export const removedContact = (c: PersonalContactResource): boolean =>
  c.availability === 'Deleted' || c.availability === 'Purged';

/**
 * The import row of a contact with a phone or an email; null for one with neither, or removed.
 * The phone and email go to the import's own checks unchanged: an invalid phone is an error row
 * there, as it would be in an import.
 */
export function ringCentralContactRow(contact: PersonalContactResource): Record<string, unknown> | null {
  if (removedContact(contact) || contact.id === undefined) return null;
  const phone =
    PHONES.map((key) => contact[key]).find((v) => typeof v === 'string' && v.trim() !== '') ?? null;
  const email =
    [contact.email, contact.email2, contact.email3].find((v) => typeof v === 'string' && v.trim() !== '') ??
    null;
  if (phone === null && email === null) return null;
  const row: Record<string, unknown> = { source: RINGCENTRAL_SOURCE, external_id: String(contact.id) };
  if (contact.firstName) row.first_name = contact.firstName;
  if (contact.lastName) row.last_name = contact.lastName;
  const name = [contact.firstName, contact.lastName].filter((v) => v).join(' ');
  if (name !== '') row.name = name;
  if (contact.company) row.company = contact.company;
  if (phone !== null) row.phone = phone;
  if (email !== null) row.email = email;
  return row;
}
