import type { Db, IndexDescription } from 'mongodb';
import { COLLECTIONS, type CollectionName } from './collections.js';

// Plain and unique compound indexes only: FerretDB (tests, local) has no partial or TTL indexes.
const INDEXES: Record<CollectionName, IndexDescription[]> = {
  [COLLECTIONS.firms]: [],
  [COLLECTIONS.firmKeys]: [],
  [COLLECTIONS.apiKeys]: [{ key: { firm: 1, created_at: -1 }, name: 'firm_created' }],
  [COLLECTIONS.apiKeyHashes]: [],
  // GET /api/widget-keys keyset: a firm's widget keys, newest first.
  [COLLECTIONS.widgetKeys]: [{ key: { firm: 1, created_at: -1, _id: -1 }, name: 'firm_created_id' }],
  [COLLECTIONS.widgetKeyHashes]: [],
  [COLLECTIONS.sessionRevocations]: [],
  // list-agents keyset: a firm's agents newest first; every firm's (the platform's list).
  [COLLECTIONS.agents]: [
    { key: { firm: 1, created_at: -1 }, name: 'firm_created' },
    { key: { created_at: -1, _id: -1 }, name: 'created_id' },
  ],
  [COLLECTIONS.agentKeys]: [],
  [COLLECTIONS.calls]: [
    // list-calls keyset: finished calls of a firm by end time then id, newest first.
    { key: { firm: 1, finished: 1, end_timestamp: -1, call_id: -1 }, name: 'firm_finished_end_id' },
  ],
  [COLLECTIONS.chats]: [{ key: { firm: 1, created_at: -1 }, name: 'firm_created' }],
  // Keyed by _id `<chat_id>:<version>`: the unique _id is the concurrency control.
  // The lost-chats sweep: a firm's chat ends by the time they were logged, a range from its last
  // pass's place (the log, not the chat document, which a writer may not have caught up).
  [COLLECTIONS.chatTurns]: [
    { key: { firm: 1, kind: 1, created_at: 1, _id: 1 }, name: 'firm_kind_created_id' },
  ],
  // Read and written by _id only.
  [COLLECTIONS.chatEffects]: [],
  [COLLECTIONS.callKeys]: [],
  [COLLECTIONS.idempotencyKeys]: [{ key: { created_at: 1 }, name: 'created_at' }],
  // Keyed by _id, derived from our call id (the simulator's findCall is a point read).
  [COLLECTIONS.simulatorCalls]: [],
  // Point reads by _id (`<firm>:<phone>`) only.
  [COLLECTIONS.dncEntries]: [],
  // GET /api/compliance/decisions keyset: a firm's decisions newest first, by number or not.
  [COLLECTIONS.dialDecisions]: [
    { key: { firm: 1, at: -1, _id: -1 }, name: 'firm_at_id' },
    { key: { firm: 1, phone: 1, at: -1, _id: -1 }, name: 'firm_phone_at_id' },
  ],
  // list-leads keyset: a firm's leads, newest first.
  // Point reads by _id only.
  [COLLECTIONS.appointments]: [],
  [COLLECTIONS.leadAppointments]: [],
  [COLLECTIONS.bookingLeads]: [],
  [COLLECTIONS.dncRemovals]: [],
  // Replays: a firm's events of a time window, in order (one streaming cursor); tests read a firm's.
  [COLLECTIONS.events]: [{ key: { firm: 1, occurred_at: 1, _id: 1 }, name: 'firm_occurred_id' }],
  // A firm's endpoints (at most 20): the fan-out's and the list's one small query.
  [COLLECTIONS.webhookEndpoints]: [{ key: { firm: 1, created_at: -1, _id: -1 }, name: 'firm_created_id' }],
  // GET /api/webhook-endpoints/{id}/deliveries keyset: newest first.
  [COLLECTIONS.webhookDeliveries]: [
    { key: { endpoint: 1, created_at: -1, _id: -1 }, name: 'endpoint_created_id' },
  ],
  [COLLECTIONS.webhookNotices]: [],
  [COLLECTIONS.leads]: [{ key: { firm: 1, created_at: -1, _id: -1 }, name: 'firm_created_id' }],
  // list-campaigns keyset: a firm's campaigns, newest first.
  [COLLECTIONS.campaigns]: [{ key: { firm: 1, created_at: -1, _id: -1 }, name: 'firm_created_id' }],
  // Crash clean-up of an unfinished add (by batch); membership itself is the unique _id.
  [COLLECTIONS.campaignLeads]: [{ key: { campaign_id: 1, batch: 1 }, name: 'campaign_batch' }],
  // Campaigns whose phones were added before phone pages existed: the fan-out turns their
  // phones, read with one cursor in _id order, into pages once.
  [COLLECTIONS.campaignClaims]: [{ key: { campaign_id: 1, _id: 1 }, name: 'campaign_id' }],
  // Read by _id (the fan-out); by batch only for the crash clean-up of an unfinished add.
  [COLLECTIONS.campaignPhonePages]: [{ key: { campaign_id: 1, batch: 1 }, name: 'campaign_batch' }],
  [COLLECTIONS.campaignFanouts]: [],
  // Read and written by _id only.
  [COLLECTIONS.campaignPauses]: [],
  // Read by _id only (the firm's workflows list: core/domain/workflows).
  [COLLECTIONS.workflowDirectories]: [],
  [COLLECTIONS.contacts]: [
    // GET /api/contacts keyset: a firm's contacts newest first, ties by _id.
    { key: { firm: 1, created_at: -1, _id: -1 }, name: 'firm_created_id' },
    // ?q=: anchored prefix matches on the search terms (multikey), an index range on MongoDB.
    { key: { firm: 1, search_terms: 1 }, name: 'firm_search_terms' },
    // The rollback of a failed import.
    { key: { import_id: 1 }, name: 'import_id' },
  ],
  // Keyed by _id `<firm>|<kind>|<value>`: the unique _id is the claim on a phone or email.
  // import_id: a retried import reads its own claims back; a failed one deletes them.
  [COLLECTIONS.contactKeys]: [{ key: { import_id: 1 }, name: 'import_id' }],
  [COLLECTIONS.contactImports]: [],
  // Read and deleted by _id only (core/domain/contacts/import-staging.ts).
  [COLLECTIONS.contactImportChunks]: [],
  // Read and written by _id only (core/domain/contacts/contact-sync*.ts).
  [COLLECTIONS.contactSyncs]: [],
  [COLLECTIONS.contactSyncClaims]: [],
  [COLLECTIONS.contactSyncMarks]: [],
  [COLLECTIONS.clioConnections]: [],
  // expires_at: the hourly prune deletes the states no callback used (core/domain/crm/clio-connection.ts).
  [COLLECTIONS.clioOAuthStates]: [{ key: { expires_at: 1 }, name: 'expires_at' }],
  [COLLECTIONS.clioOAuthConfirmations]: [{ key: { expires_at: 1 }, name: 'expires_at' }],
  [COLLECTIONS.clioReconnectNotices]: [],
  [COLLECTIONS.clioClientAlerts]: [],
  [COLLECTIONS.contactExternalKeys]: [],
  [COLLECTIONS.ringcentralConnections]: [],
  // expires_at: the hourly prune deletes the states no callback used (core/domain/phone/ringcentral-connection.ts).
  [COLLECTIONS.ringcentralOAuthStates]: [{ key: { expires_at: 1 }, name: 'expires_at' }],
  [COLLECTIONS.ringcentralSubscriptions]: [],
  [COLLECTIONS.missedCalls]: [],
  [COLLECTIONS.missedCallCallbacks]: [],
  [COLLECTIONS.inboundAnswers]: [],
  [COLLECTIONS.toolCallNotices]: [],
  // Drained in _id order (time received), then deleted by _id: the _id index is all it needs.
  [COLLECTIONS.webhookOutbox]: [],
  // Read and written by _id only.
  [COLLECTIONS.webhookOutboxIds]: [],
  [COLLECTIONS.effectLeases]: [],
  [COLLECTIONS.callEffects]: [],
  // Read and written by _id (the firm) only.
  [COLLECTIONS.lostCallSweeps]: [],
  [COLLECTIONS.lostChatSweeps]: [],
  [COLLECTIONS.webhookOutboxBookings]: [],
  [COLLECTIONS.contactSyncCompletions]: [],
  [COLLECTIONS.contactSyncPages]: [],
  // Read and written by _id only.
  [COLLECTIONS.workflowVersions]: [],
  [COLLECTIONS.workflowTriggers]: [],
  // GET /api/workflows/{id}/runs keyset: a workflow's runs, newest first.
  [COLLECTIONS.workflowRuns]: [
    { key: { workflow_id: 1, started_at: -1, _id: -1 }, name: 'workflow_started_id' },
  ],
  [COLLECTIONS.workflowSteps]: [],
  [COLLECTIONS.workflowWaits]: [],
  [COLLECTIONS.workflowWaitResolutions]: [],
};

/**
 * Indexes of earlier versions that no query uses any more, by collection: dropped by the release
 * step (`dropRetiredIndexes`), so the writes stop paying for them. Until it runs, processes of the
 * earlier version still use them; after, a query of theirs that did scans its collection for the
 * minutes of a rolling deploy.
 */
const RETIRED_INDEXES: Partial<Record<CollectionName, string[]>> = {
  // The lost-chats sweep read the chats that ended from the chat documents; it reads the log's ends now.
  [COLLECTIONS.chats]: ['firm_status_ended_id'],
};

/** Drops the retired indexes still present; their `<collection>.<index>` names. Safe to re-run. */
export async function dropRetiredIndexes(db: Db): Promise<string[]> {
  const dropped: string[] = [];
  const existing = new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  for (const [name, retired] of Object.entries(RETIRED_INDEXES)) {
    if (!existing.has(name)) continue;
    const have = new Set((await db.collection(name).listIndexes().toArray()).map((i) => String(i.name)));
    for (const index of retired) {
      if (!have.has(index)) continue;
      await db.collection(name).dropIndex(index);
      dropped.push(`${name}.${index}`);
    }
  }
  return dropped;
}

/**
 * Creates every collection and index that is missing; safe to re-run (the release step runs on
 * every deploy). An existing collection is asked only for the indexes it lacks: FerretDB 1.x
 * drops the connection when one createIndexes names two or more indexes that already exist
 * (FerretDB/FerretDB#3858, seen on 1.24.2), so re-sending the whole list failed every release
 * after the first. An index of ours that exists under its name with another key is an error: a
 * changed index needs a migration that drops the old one, not a silent keep.
 */
export async function ensureIndexes(db: Db): Promise<string[]> {
  const created: string[] = [];
  const existing = new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  for (const [name, indexes] of Object.entries(INDEXES)) {
    const isNew = !existing.has(name);
    if (isNew) await db.createCollection(name);
    const missing = isNew ? indexes : await missingIndexes(db, name, indexes);
    if (missing.length === 0) continue;
    const names = await db.collection(name).createIndexes(missing);
    created.push(...names.map((n) => `${name}.${n}`));
  }
  return created;
}

async function missingIndexes(
  db: Db,
  collection: string,
  wanted: IndexDescription[],
): Promise<IndexDescription[]> {
  if (wanted.length === 0) return [];
  const have = new Map(
    (await db.collection(collection).listIndexes().toArray()).map((i) => [String(i.name), i.key as unknown]),
  );
  return wanted.filter((index) => {
    const key = have.get(index.name!);
    if (key === undefined) return true;
    if (JSON.stringify(key) !== JSON.stringify(index.key)) {
      throw new Error(
        `index ${collection}.${index.name} exists with key ${JSON.stringify(key)}, not ${JSON.stringify(index.key)}: drop it in a migration first`,
      );
    }
    return false;
  });
}
