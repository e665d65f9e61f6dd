import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';

/**
 * One contacts import (POST /api/contacts/import). Its rows are not here: the request stages them
 * in MongoDB (core/domain/contacts/import-staging.ts), so the job stays a few hundred bytes.
 */
export interface ImportContactsJob {
  /** The import's job_id, also the _id of its record in contact_imports. */
  importId: string;
  firm: string;
  /** ISO 3166-1 alpha-2: the country of phone numbers written without one. */
  defaultCountry: string;
  /**
   * Only on jobs enqueued before rows were staged in MongoDB (docs/contacts.md#memory): the rows
   * exactly as sent. A worker still runs such a job after a deploy.
   */
  rows?: unknown[];
}

/** One contacts sync from Clio (POST /api/contacts/sync); its progress is in contact_syncs. */
export interface SyncContactsJob {
  /** The sync's job_id, also the _id of its record in contact_syncs. */
  syncId: string;
  firm: string;
}

/**
 * Every job of the contacts queue keeps the same finished history (BullMQ trims the queue's whole
 * finished set to the count of the job that just finished): an hour or the last 20 completed, a
 * week or the last 20 failed. The results live in MongoDB (contact_imports, the sync records);
 * the jobs are a few hundred bytes, an import's rows never in them.
 */
const CONTACTS_RETENTION = {
  removeOnComplete: { age: 3600, count: 20 },
  removeOnFail: { age: 7 * 24 * 3600, count: 20 },
};

export const contactJobs = {
  importContacts: defineJob<ImportContactsJob>({
    queue: QUEUE.contacts,
    name: 'import-contacts',
    id: (job) => jobId(job.importId),
    options: CONTACTS_RETENTION,
  }),
  syncContacts: defineJob<SyncContactsJob>({
    queue: QUEUE.contacts,
    name: 'sync-contacts',
    id: (job) => jobId(job.syncId),
    options: CONTACTS_RETENTION,
  }),
  /** Rolls back imports whose job BullMQ gave up without a last attempt (workers kept dying). */
  sweepContactImports: defineJob<Record<string, never>>({
    queue: QUEUE.contacts,
    name: 'sweep-contact-imports',
    everyMs: 600_000,
    options: CONTACTS_RETENTION,
  }),
};
