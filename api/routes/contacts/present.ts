import type { Static } from '@sinclair/typebox';
import type { ContactSyncDoc } from '../../../core/domain/contacts/contact-sync.js';
import type { ContactDoc } from '../../../core/domain/contacts/contacts.js';
import {
  failedMessage,
  type ContactImportDoc,
  type ImportResult,
} from '../../../core/domain/contacts/import-record.js';
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
export function importResultView(result: ImportResult): Static<typeof ImportContactsResponse> {
  return {
    imported: result.imported,
    duplicates: result.duplicates,
    errors: result.errors,
    error_rows: result.error_rows.map((row) => ({ index: row.index, reason: row.reason })),
  };
}

/** An import job as GET /api/contacts/import/{job_id} shows it: processing, completed or failed. */
export function importJobView(
  record: ContactImportDoc,
): Static<typeof ImportJobResponse> | Static<typeof ImportProcessing> {
  if (record.status === 'completed' && record.result !== null)
    return { job_id: record._id, status: 'completed', ...importResultView(record.result) };
  if (record.status === 'failed')
    return { job_id: record._id, status: 'failed', message: failedMessage(record.failure) };
  return { job_id: record._id, status: 'processing' };
}

/** A contacts sync as GET /api/contacts/sync/{job_id} shows it. */
export function syncJobView(sync: ContactSyncDoc): Static<typeof SyncJobResponse> {
  return {
    job_id: sync._id,
    status: sync.status,
    pages: sync.pages,
    imported: sync.imported,
    duplicates: sync.duplicates,
    errors: sync.errors,
    ...(sync.source === 'ringcentral' ? { deleted: sync.deleted ?? 0, updated: sync.updated ?? 0 } : {}),
    ...(sync.status === 'failed'
      ? { message: `The sync failed (${sync.failure ?? 'unknown error'}); start a new sync.` }
      : {}),
  };
}
