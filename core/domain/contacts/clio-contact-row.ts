import type { ClioListedContact } from '../../integrations/crm/clio.js';

// A Clio contact as a contacts import row (docs/contacts.md#synced-from-clio). Pure: the sync
// stores exactly what POST /api/contacts/import would store for this row, so a test can import
// the same rows and compare the counts.

/** Where a synced contact came from (its `source`); its Clio id is its `external_id`. */
export const CLIO_SOURCE = 'clio';

/** The contact's primary value, else the listed one marked `primary`, else the first. */
function preferred<T>(
  primary: string | null,
  items: T[],
  value: (t: T) => string | null,
  isDefault: (t: T) => boolean,
) {
  if (primary !== null && primary.trim() !== '') return primary;
  const chosen = items.find((t) => isDefault(t) && value(t) !== null) ?? items.find((t) => value(t) !== null);
  return chosen === undefined ? null : value(chosen);
}

/**
 * The import row of a Clio Person with a phone or an email; null for a Company or a Person with
 * neither (nothing to store). The phone and email go to the import's own checks unchanged: an
 * invalid phone is an error row there, as it would be in an import.
 */
export function clioContactRow(contact: ClioListedContact): Record<string, unknown> | null {
  if (contact.type !== 'Person') return null;
  const phone = preferred(
    contact.primary_phone_number,
    contact.phone_numbers,
    (p) => p.number,
    (p) => p.primary,
  );
  const email = preferred(
    contact.primary_email_address,
    contact.email_addresses,
    (e) => e.address,
    (e) => e.primary,
  );
  if (phone === null && email === null) return null;
  const row: Record<string, unknown> = { source: CLIO_SOURCE, external_id: String(contact.id) };
  if (contact.first_name !== null) row.first_name = contact.first_name;
  if (contact.last_name !== null) row.last_name = contact.last_name;
  if (contact.name !== null) row.name = contact.name;
  if (phone !== null) row.phone = phone;
  if (email !== null) row.email = email;
  return row;
}
