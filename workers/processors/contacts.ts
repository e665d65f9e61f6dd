import { DelayedError, UnrecoverableError } from 'bullmq';
import type { ImportContactsJob, SyncContactsJob } from '../../jobs/contacts.js';
import { failContactSync, syncsCollection } from '../../core/domain/contacts/contact-sync.js';
import {
  SyncNotRunnableError,
  SyncSliceEnded,
  runContactSync,
} from '../../core/domain/contacts/contact-sync-pages.js';
import { CrmError } from '../../core/integrations/crm/clio.js';
import { failContactImport, settleAbandonedImports } from '../../core/domain/contacts/import-record.js';
import { ImportNotRunnableError, runContactImport } from '../../core/domain/contacts/import-rows.js';
import { RecordBusyError } from '../../core/platform/redis-mutex.js';
import { recordImportCompleted } from '../../core/domain/contacts/record-contacts-events.js';
import type { JobProcessor } from '../runner.js';

/** How long an import waits before asking again for its firm's turn (plus jitter). */
const TURN_RETRY_MS = 500;

/**
 * One contacts import (job id = its job_id). Imports of one firm take turns: while another holds
 * the firm's turn this job steps aside as a delayed job, which costs no attempt. Completed, it
 * records contacts.import.completed (a sync's pages are imports too, but not this job's).
 */
export const importContacts: JobProcessor<ImportContactsJob> = async (job, { services, token, attempt }) => {
  try {
    const result = await runContactImport(services, job.data);
    await recordImportCompleted(services, job.data.importId);
    return { imported: result.imported, duplicates: result.duplicates, errors: result.errors };
  } catch (err) {
    if (err instanceof RecordBusyError) {
      await job.moveToDelayed(Date.now() + TURN_RETRY_MS + Math.floor(Math.random() * TURN_RETRY_MS), token);
      throw new DelayedError();
    }
    if (err instanceof ImportNotRunnableError) throw new UnrecoverableError(err.message);
    if (attempt.lastAttempt) {
      await failContactImport(services, job.data, (err as Error).message).catch((rollbackErr: unknown) =>
        services.log.error({ err: rollbackErr, importId: job.data.importId }, 'import rollback failed'),
      );
    }
    throw err;
  }
};

/** Every 10 minutes: imports whose job was given up without its last attempt are rolled back. */
export const sweepContactImports: JobProcessor<Record<string, never>> = async (_job, { services }) => ({
  settled: await settleAbandonedImports(services),
});

/**
 * One contacts sync from Clio (job id = its job_id): resumes at the first page its record has
 * not counted. Waits for the firm's turn as an import does; a refusal that cannot pass, or the
 * last attempt's failure, ends the sync as failed.
 */
export const syncContacts: JobProcessor<SyncContactsJob> = async (job, { services, token, attempt }) => {
  try {
    const sync = await runContactSync(services, job.data);
    return { pages: sync.pages, imported: sync.imported, duplicates: sync.duplicates, errors: sync.errors };
  } catch (err) {
    if (err instanceof SyncSliceEnded) {
      // Its share of the slot is used: behind the jobs now waiting (a promoted job joins the
      // back of the wait list), other firms' imports and syncs first. Costs no attempt.
      await job.moveToDelayed(Date.now(), token);
      throw new DelayedError();
    }
    if (err instanceof RecordBusyError) {
      await job.moveToDelayed(Date.now() + TURN_RETRY_MS + Math.floor(Math.random() * TURN_RETRY_MS), token);
      throw new DelayedError();
    }
    if (err instanceof SyncNotRunnableError) throw new UnrecoverableError(err.message);
    const final = err instanceof CrmError && err.final;
    if (final || attempt.lastAttempt) {
      const sync = await syncsCollection(services.mongo.db).findOne({ _id: job.data.syncId });
      if (sync !== null && sync.firm === job.data.firm) {
        await failContactSync(services, sync, (err as Error).message).catch((failErr: unknown) =>
          services.log.error({ err: failErr, syncId: job.data.syncId }, 'contacts sync failure not recorded'),
        );
      }
    }
    if (final) throw new UnrecoverableError((err as Error).message);
    throw err;
  }
};
