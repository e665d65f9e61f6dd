import type { Services } from '../../wiring/services.js';
import { recordEvent } from '../events/record-event.js';
import { countedSync, syncsCollection } from './contact-sync.js';
import { importsCollection } from './import-record.js';
import { importJobView, syncJobView } from './contacts-view.js';

// contacts.import.completed and contacts.sync.completed (docs/events.md#event-types): once per
// import or sync (key `completed`), recorded by the job that completed it, and again (a no-op)
// by a retry that finds it completed.

/** contacts.import.completed for a contacts import (a CSV's: not a sync's pages) that has completed. */
export async function recordImportCompleted(services: Services, importId: string): Promise<void> {
  const record = await importsCollection(services.mongo.db).findOne({ _id: importId });
  if (record === null || record.status !== 'completed') return;
  await recordEvent(services, {
    firm: record.firm,
    type: 'contacts.import.completed',
    subject: record._id,
    key: 'completed',
    occurred_at: record.completed_at ?? record.updated_at,
    data: importJobView(record),
  });
}

/** contacts.sync.completed for a sync that has completed. */
export async function recordSyncCompleted(services: Services, syncId: string): Promise<void> {
  const stored = await syncsCollection(services.mongo.db).findOne({ _id: syncId });
  const sync = stored === null ? null : await countedSync(services.mongo.db, stored);
  if (sync === null || sync.status !== 'completed') return;
  await recordEvent(services, {
    firm: sync.firm,
    type: 'contacts.sync.completed',
    subject: sync._id,
    key: 'completed',
    occurred_at: sync.completed_at ?? sync.updated_at,
    data: syncJobView(sync),
  });
}
