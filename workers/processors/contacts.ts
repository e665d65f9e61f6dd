import { DelayedError, UnrecoverableError } from 'bullmq';
import type { ImportContactsJob } from '../../jobs/contacts.js';
import { failContactImport, settleAbandonedImports } from '../../core/domain/contacts/import-record.js';
import { ImportNotRunnableError, runContactImport } from '../../core/domain/contacts/import-rows.js';
import { RecordBusyError } from '../../core/platform/redis-mutex.js';
import type { JobProcessor } from '../runner.js';

/** How long an import waits before asking again for its firm's turn (plus jitter). */
const TURN_RETRY_MS = 500;

/**
 * One contacts import (job id = its job_id). Imports of one firm take turns: while another holds
 * the firm's turn this job steps aside as a delayed job, which costs no attempt.
 */
export const importContacts: JobProcessor<ImportContactsJob> = async (job, { services, token, attempt }) => {
  try {
    const result = await runContactImport(services, job.data);
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
