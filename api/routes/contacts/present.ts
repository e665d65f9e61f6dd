import type { Static } from '@sinclair/typebox';
import type { ContactSyncDoc } from '../../../core/domain/contacts/contact-sync.js';
import type { ContactDoc } from '../../../core/domain/contacts/contacts.js';
import type { ContactImportDoc, ImportResult } from '../../../core/domain/contacts/import-record.js';
import {
  importJobView as publicImportJob,
  importResultView as publicImportResult,
  syncJobView as publicSyncJob,
} from '../../../core/domain/contacts/contacts-view.js';
import type { ContactRecord, ImportContactsResponse, ImportJobResponse, ImportProcessing } from './schema.js';
import type { SyncJobResponse } from './sync-schema.js';

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
    ...(contact.deleted_at ? { deleted_at: contact.deleted_at.toISOString() } : {}),
  };
}

/** An import's counts as the API shows them (a completed import record's result). */
export const importResultView: (result: ImportResult) => Static<typeof ImportContactsResponse> =
  publicImportResult;

/** An import job as GET /api/contacts/import/{job_id} shows it (contacts.import.completed carries it too). */
export const importJobView: (
  record: ContactImportDoc,
) => Static<typeof ImportJobResponse> | Static<typeof ImportProcessing> = publicImportJob;

/** A contacts sync as GET /api/contacts/sync/{job_id} shows it (contacts.sync.completed carries it too). */
export const syncJobView: (sync: ContactSyncDoc) => Static<typeof SyncJobResponse> = publicSyncJob;
