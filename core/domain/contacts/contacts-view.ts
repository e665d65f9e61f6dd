import type { ContactSyncDoc } from './contact-sync.js';
import { failedMessage, type ContactImportDoc, type ImportResult } from './import-record.js';

// The public shapes of a contacts import and a contacts sync: what their routes answer and what
// contacts.import.completed and contacts.sync.completed carry (docs/events.md).

/** An import's counts as the API shows them (a completed import record's result). */
export function importResultView(result: ImportResult) {
  return {
    imported: result.imported,
    duplicates: result.duplicates,
    errors: result.errors,
    error_rows: result.error_rows.map((row) => ({ index: row.index, reason: row.reason })),
  };
}

/** An import job as GET /api/contacts/import/{job_id} shows it: processing, completed or failed. */
export function importJobView(record: ContactImportDoc) {
  if (record.status === 'completed' && record.result !== null)
    return { job_id: record._id, status: 'completed' as const, ...importResultView(record.result) };
  if (record.status === 'failed')
    return { job_id: record._id, status: 'failed' as const, message: failedMessage(record.failure) };
  return { job_id: record._id, status: 'processing' as const };
}

/** A contacts sync as GET /api/contacts/sync/{job_id} shows it. */
export function syncJobView(sync: ContactSyncDoc) {
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
