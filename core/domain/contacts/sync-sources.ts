import type { Services } from '../../wiring/services.js';
import { CrmError } from '../../integrations/crm/clio.js';
import type { RingCentralClient } from '../../integrations/phone/ringcentral.js';
import { firmClioClient } from '../crm/firm-clio-client.js';
import { getFirm } from '../firms/firms.js';
import { firmRingCentralClient } from '../phone/ringcentral-connection.js';
import { clioContactRow } from './clio-contact-row.js';
import type { ContactSyncDoc } from './contact-sync.js';
import { markExternalDeleted, updateExternalContact } from './external-keys.js';
import { RINGCENTRAL_SOURCE, removedContact, ringCentralContactRow } from './ringcentral-contact-row.js';

// Where a contacts sync reads its pages (contact-sync-pages.ts runs any of them the same way:
// the same record, counts, resumability, turn-taking and bounds). A page cursor is a string kept
// in the sync's record (`page_url`): Clio's paging link; for RingCentral `fsync:<pageId>` (a full
// sync's page) or `isync:<syncToken>` (the changes after that token).

/** Contacts per page asked of Clio (its maximum is 200). */
export const CLIO_SYNC_PAGE_SIZE = 100;

export interface SourcePage {
  /** Import rows of the records to store. */
  rows: Record<string, unknown>[];
  /** The cursor of the next page; null after the last. */
  next: string | null;
  /** RingCentral: the ISync token the next sync starts from, as of this page. */
  token?: string | null;
  /** Records the source removed, marked deleted_at here. */
  deleted: number;
  /** Records the source changed whose contacts exist, updated in place here. */
  updated: number;
}

export interface SyncSourceReader {
  first(sync: ContactSyncDoc): string;
  read(sync: ContactSyncDoc, cursor: string): Promise<SourcePage>;
}

async function clioReader(services: Services, sync: ContactSyncDoc): Promise<SyncSourceReader> {
  const firm = await getFirm(services.mongo.db, sync.firm);
  const client = firm === null ? null : await firmClioClient(services, firm);
  if (client === null) throw new CrmError(`The firm ${sync.firm} no longer has Clio set up.`, true, false);
  return {
    first: (s) => client.firstContactsPageUrl(CLIO_SYNC_PAGE_SIZE, s.updated_since),
    async read(_s, url) {
      const page = await client.contactsPage(url);
      const rows = page.contacts.flatMap((c): Record<string, unknown>[] => {
        const row = clioContactRow(c);
        return row === null ? [] : [row];
      });
      return { rows, next: page.next, deleted: 0, updated: 0 };
    },
  };
}

/**
 * RingCentral's address-book sync: FSync from page 1 when the firm has no ISync token yet, else
 * ISync from it. A full sync keeps its first page's token (changes made while it pages are read
 * again by the next ISync: at worst a duplicate); an incremental one the last page's.
 */
export function ringCentralReader(services: Services, client: RingCentralClient): SyncSourceReader {
  const db = services.mongo.db;
  return {
    first: (s) => (s.sync_token ? `isync:${s.sync_token}` : 'fsync:1'),
    async read(s, cursor) {
      const full = /^fsync:(\d+)$/.exec(cursor);
      const incremental = /^isync:(.+)$/.exec(cursor);
      if (full === null && incremental === null)
        throw new CrmError(`A bad RingCentral page cursor: ${cursor}`, true, false);
      const page = await client.addressBookPage(
        full !== null
          ? { syncType: 'FSync', pageId: full[1] === '1' ? null : Number(full[1]) }
          : { syncType: 'ISync', syncToken: incremental![1]! },
      );
      let deleted = 0;
      let updated = 0;
      const rows: Record<string, unknown>[] = [];
      const now = new Date();
      for (const record of page.records) {
        if (record.id === undefined) continue;
        const externalId = String(record.id);
        if (removedContact(record)) {
          if (await markExternalDeleted(db, s.firm, RINGCENTRAL_SOURCE, externalId, now)) deleted += 1;
          continue;
        }
        const row = ringCentralContactRow(record);
        if (row === null) continue;
        if (incremental !== null) {
          const fields = {
            ...(typeof row.first_name === 'string' ? { first_name: row.first_name } : {}),
            ...(typeof row.last_name === 'string' ? { last_name: row.last_name } : {}),
            ...(typeof row.name === 'string' ? { name: row.name } : {}),
            ...(typeof row.company === 'string' ? { company: row.company } : {}),
          };
          if (await updateExternalContact(db, s.firm, RINGCENTRAL_SOURCE, externalId, fields)) {
            updated += 1;
            continue;
          }
        }
        rows.push(row);
      }
      let next: string | null;
      let token: string | null | undefined;
      if (full !== null) {
        next = page.nextPageId === null ? null : `fsync:${page.nextPageId}`;
        // The full sync's first page's token; later pages keep it.
        token = full[1] === '1' ? page.syncToken : undefined;
      } else {
        token = page.syncToken ?? incremental![1]!;
        next =
          page.more && page.syncToken !== null && page.syncToken !== incremental![1]
            ? `isync:${page.syncToken}`
            : null;
      }
      return { rows, next, ...(token === undefined ? {} : { token }), deleted, updated };
    },
  };
}

/** The reader of the sync's source. */
export async function syncSourceReader(services: Services, sync: ContactSyncDoc): Promise<SyncSourceReader> {
  if (sync.source === 'ringcentral') {
    return ringCentralReader(services, await firmRingCentralClient(services, sync.firm));
  }
  return clioReader(services, sync);
}
