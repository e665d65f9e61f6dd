import type { Static } from '@sinclair/typebox';
import type { ContactDoc } from '../../../core/domain/contacts/contacts.js';
import type { ContactRecord } from './schema.js';

export function contactView(contact: ContactDoc): Static<typeof ContactRecord> {
  return {
    id: contact._id,
    firm: contact.firm,
    first_name: contact.first_name ?? null,
    last_name: contact.last_name ?? null,
    name: contact.name ?? null,
    phone: contact.phone ?? null,
    phone_extension: contact.phone_extension ?? null,
    email: contact.email ?? null,
    company: contact.company ?? null,
    notes: contact.notes ?? null,
    tags: contact.tags,
    source: contact.source ?? null,
    external_id: contact.external_id ?? null,
    // Pairs become an object here; Object.fromEntries makes own properties, "__proto__" included.
    custom: Object.fromEntries(contact.custom.map((c) => [c.key, c.value])),
    created_at: contact.created_at.toISOString(),
  };
}
