import { QUEUE } from './queues.js';
import { defineJob, jobId } from './define.js';

/**
 * One contacts import (POST /api/contacts/import): the rows exactly as sent (at most 5,000;
 * each is checked by the worker, so anything JSON can hold may be here).
 */
export interface ImportContactsJob {
  /** The import's job_id, also the _id of its record in contact_imports. */
  importId: string;
  firm: string;
  /** ISO 3166-1 alpha-2: the country of phone numbers written without one. */
  defaultCountry: string;
  rows: unknown[];
}

export const contactJobs = {
  importContacts: defineJob<ImportContactsJob>({
    queue: QUEUE.contacts,
    name: 'import-contacts',
    id: (job) => jobId(job.importId),
    // A job carries up to 16 MiB of rows, and its result lives in contact_imports: keep few.
    options: {
      removeOnComplete: { age: 3600, count: 5 },
      removeOnFail: { age: 7 * 24 * 3600, count: 20 },
    },
  }),
  /** Rolls back imports whose job BullMQ gave up without a last attempt (workers kept dying). */
  sweepContactImports: defineJob<Record<string, never>>({
    queue: QUEUE.contacts,
    name: 'sweep-contact-imports',
    everyMs: 600_000,
  }),
};
