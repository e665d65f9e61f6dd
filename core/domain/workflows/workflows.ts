import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { COLLECTIONS, FIRM_COLLECTIONS, collection, firmCollection } from '../../platform/db/collections.js';
import { decodeCursor, encodeCursor, invalidCursor } from '../../platform/db/keyset-cursor.js';
import { UnavailableError, conflict, notFound, serviceUnavailable } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { RecordBusyError, withRecordLock } from '../../platform/redis-mutex.js';
import { FIRM_SLUG_PATTERN } from '../firms/firm-slug.js';
import { assertValidGraph, type WorkflowEdge, type WorkflowNode } from './graph.js';
import { assertRunnable, indexTriggers, saveVersion, unindexTriggers } from './versions.js';
import { replaceById } from '../../platform/db/upsert.js';

// Workflows: a firm's flow-builder graphs (docs/workflows.md).
//
// Storage. Nodes and edges are the client's objects, with keys and values of its choosing, and
// must come back exactly as sent. As BSON they would not: MongoDB and FerretDB refuse or
// reinterpret keys that start with "$" or contain "." (FerretDB also keeps its own "$s" key in
// each stored object), PostgreSQL-backed FerretDB refuses the NUL character, and the BSON
// encoder turns a lone UTF-16 surrogate into U+FFFD. So each workflow document keeps them as
// JSON text (`nodes_json`, `edges_json`), written by JSON.stringify from the validated request:
// the database sees two strings, any key is safe, key and array order are kept, and reads
// splice the stored text into the response without parsing it again.
//
// Where. Workflows are the largest documents the service stores (up to 2 MiB each), and
// FerretDB answers every read, even by _id, by scanning the collection's whole table, each row
// decompressed: a read's cost grows with every byte stored beside it (bench/workflows-list.ts).
// So each firm's workflows live in a collection of their own, `workflows.<slug>`
// (FIRM_COLLECTIONS), and a workflow's id names its firm (`wf_<slug>_<random>`): a read by id
// goes straight to the firm's collection, and no request of one firm ever reads another firm's
// graphs. On MongoDB, reads by _id are index lookups either way; the cost there is one
// collection (and its _id index) per firm that has workflows.
//
// The list. A directory document per firm (`_id` = the slug, in workflow_directories) lists its
// workflow ids with their last update; a page is one read of it plus point reads of the page's
// workflows (no sort of whole documents in memory, no index to keep per firm collection). Every
// write of a firm's workflows (create, update, delete) takes the firm's record lock and writes
// the workflow and the directory in turn, so concurrent writes take turns: the last writer wins
// whole (one document replace), and the directory never loses an entry to a lost update.
// Crash windows: a create stores the workflow before its entry (a crash between them leaves an
// unlisted workflow whose id was never returned); a delete removes the entry first; an update
// rewrites the entry after the workflow (a crash between leaves the list order stale until the
// next write). The list skips an entry whose workflow is missing.

/** At most this many workflows per firm: the directory document stays small (~0.5 MB at most). */
export const MAX_WORKFLOWS_PER_FIRM = 10_000;
/** A list page stops early once its graphs reach this much JSON text (at least one workflow per page). */
const LIST_PAGE_BYTES = 16 * 1024 * 1024;
/** Point reads of a list page in flight at once. */
const LIST_READ_CONCURRENCY = 8;
const CURSOR_SCOPE = 'list-workflows';

export interface WorkflowDoc {
  _id: string;
  firm: string;
  name: string;
  /** JSON.stringify of the request's nodes array: see the storage note above. */
  nodes_json: string;
  edges_json: string;
  node_count: number;
  edge_count: number;
  created_at: Date;
  updated_at: Date;
  /** Runs on its triggers (docs/workflows.md#activation); absent: a draft. */
  active?: boolean;
  /** The last version made of it (activation, or an edit while active); absent: none yet. */
  version?: number;
  /** The trigger index documents that list it while active (versions.ts). */
  trigger_keys?: string[];
}

/** A workflow without its graph (firm checks, timestamps). */
export type WorkflowMeta = Omit<WorkflowDoc, 'nodes_json' | 'edges_json'>;

interface DirectoryEntry {
  id: string;
  /** The workflow's updated_at, in milliseconds. */
  updated_at: number;
}

interface WorkflowDirectoryDoc {
  _id: string;
  entries: DirectoryEntry[];
  updated_at: Date;
}

export interface WorkflowInput {
  name: string;
  nodes: WorkflowNode[];
  edges: WorkflowEdge[];
}

/** The firm's own collection of workflows (see "Where" above). */
export const workflows = (db: Db, firm: string) =>
  firmCollection<WorkflowDoc>(db, FIRM_COLLECTIONS.workflows, firm);

const FIRM_SLUG = new RegExp(FIRM_SLUG_PATTERN);

/** A new workflow id, naming its firm: `wf_<slug>_<random>` (a slug has no "_"). */
const newWorkflowId = (firm: string): string => newId(`wf_${firm}`, 12);

/** The firm a workflow id names; undefined when the text is not a workflow id. */
function firmOfWorkflowId(id: string): string | undefined {
  const match = /^wf_([a-z0-9-]+)_[A-Za-z0-9_-]+$/.exec(id);
  return match !== null && FIRM_SLUG.test(match[1]!) ? match[1] : undefined;
}

const directories = (db: Db) => collection<WorkflowDirectoryDoc>(db, COLLECTIONS.workflowDirectories);

const META_PROJECTION = { nodes_json: 0, edges_json: 0 } as const;

async function readEntries(db: Db, firm: string): Promise<DirectoryEntry[]> {
  return (await directories(db).findOne({ _id: firm }))?.entries ?? [];
}

async function writeEntries(db: Db, firm: string, entries: DirectoryEntry[]): Promise<void> {
  await replaceById(directories(db), firm, { entries, updated_at: new Date() });
}

/** The writers of one firm's workflows take turns (see above); busy for 10 s: 503, retry. */
export async function withFirmWorkflowsLock<T>(
  services: Services,
  firm: string,
  fn: () => Promise<T>,
): Promise<T> {
  if (services.redis.status !== 'ready') throw new UnavailableError('redis');
  try {
    return await withRecordLock(services.redis, redisKeys(services.config).workflowsLock(firm), fn);
  } catch (err) {
    if (err instanceof RecordBusyError) {
      throw serviceUnavailable(
        "The firm's workflows are being changed by another request; retry shortly.",
        1,
      );
    }
    throw err;
  }
}

/**
 * The time of a write, taken under the firm's lock: strictly later than every write of the
 * firm's workflows before it (and than `previous`), even within one millisecond or after a clock
 * step back. So "most recently updated first" is exactly the order of the writes.
 */
function nextUpdateTime(entries: DirectoryEntry[], previous?: Date): Date {
  let latest = previous?.getTime() ?? -Infinity;
  for (const e of entries) latest = Math.max(latest, e.updated_at);
  return new Date(Math.max(Date.now(), latest + 1));
}

function graphFields(input: WorkflowInput) {
  return {
    name: input.name,
    nodes_json: JSON.stringify(input.nodes),
    edges_json: JSON.stringify(input.edges),
    node_count: input.nodes.length,
    edge_count: input.edges.length,
  };
}

export async function createWorkflow(
  services: Services,
  firm: string,
  input: WorkflowInput,
): Promise<WorkflowDoc> {
  assertValidGraph(input.nodes, input.edges);
  const db = services.mongo.db;
  const fields = graphFields(input);
  return withFirmWorkflowsLock(services, firm, async () => {
    const entries = await readEntries(db, firm);
    if (entries.length >= MAX_WORKFLOWS_PER_FIRM) {
      throw conflict(
        'workflow_limit_reached',
        `A firm keeps at most ${MAX_WORKFLOWS_PER_FIRM.toLocaleString('en-US')} workflows; delete some first.`,
      );
    }
    const now = nextUpdateTime(entries);
    const doc: WorkflowDoc = { _id: newWorkflowId(firm), firm, ...fields, created_at: now, updated_at: now };
    await workflows(db, firm).insertOne(doc);
    try {
      await writeEntries(db, firm, [...entries, { id: doc._id, updated_at: now.getTime() }]);
    } catch (err) {
      // Not listed, and its id was never returned: take it back.
      await workflows(db, firm)
        .deleteOne({ _id: doc._id })
        .catch(() => undefined);
      throw err;
    }
    return doc;
  });
}

/**
 * The firm a workflow id names, as a record the route authorizes before anything is read (another
 * firm's workflow is not even read); null for an id no workflow can have.
 */
export function workflowOwner(id: string): { firm: string } | null {
  const firm = firmOfWorkflowId(id);
  return firm === undefined ? null : { firm };
}

/** The workflow of the (checked) firm with that id; the firm is checked on the document too. */
export async function getWorkflow(db: Db, firm: string, id: string): Promise<WorkflowDoc> {
  const doc = await workflows(db, firm).findOne({ _id: id });
  if (doc === null || doc.firm !== firm) throw notFound('workflow');
  return doc;
}

/** Like getWorkflow, without sending the graph back from the database. */
export async function getWorkflowMeta(db: Db, firm: string, id: string): Promise<WorkflowMeta> {
  const doc = await readMeta(db, firm, id);
  if (doc === null) throw notFound('workflow');
  return doc;
}

export async function readMeta(db: Db, firm: string, id: string): Promise<WorkflowMeta | null> {
  const doc = await workflows(db, firm).findOne<WorkflowMeta>({ _id: id }, { projection: META_PROJECTION });
  return doc !== null && doc.firm === firm ? doc : null;
}

/** Replaces name, nodes and edges; created_at stays, updated_at moves forward. */
export async function updateWorkflow(
  services: Services,
  workflow: WorkflowMeta,
  input: WorkflowInput,
): Promise<WorkflowDoc> {
  assertValidGraph(input.nodes, input.edges);
  // An active workflow must stay runnable: checked before anything is written.
  if (workflow.active === true) await assertRunnable(services, workflow.firm, input.nodes, input.edges);
  const db = services.mongo.db;
  const fields = graphFields(input);
  return withFirmWorkflowsLock(services, workflow.firm, async () => {
    // Read again under the lock: it may have been deleted, or updated, since.
    const current = await readMeta(db, workflow.firm, workflow._id);
    if (current === null) throw notFound('workflow');
    if (current.active === true && workflow.active !== true)
      await assertRunnable(services, workflow.firm, input.nodes, input.edges);
    const entries = await readEntries(db, current.firm);
    const updatedAt = nextUpdateTime(entries, current.updated_at);
    const next: WorkflowDoc = {
      _id: current._id,
      firm: current.firm,
      ...fields,
      created_at: current.created_at,
      updated_at: updatedAt,
      ...(current.active === undefined ? {} : { active: current.active }),
      ...(current.version === undefined ? {} : { version: current.version }),
      ...(current.trigger_keys === undefined ? {} : { trigger_keys: current.trigger_keys }),
    };
    if (current.active === true) {
      // Editing an active workflow makes a new version for new runs; runs under way keep theirs.
      next.version = await saveVersion(services, next);
      next.trigger_keys = await indexTriggers(services, next, current.trigger_keys ?? []);
    }
    const result = await workflows(db, current.firm).replaceOne({ _id: current._id }, next);
    if (result.matchedCount === 0) throw notFound('workflow');
    const others = entries.filter((e) => e.id !== current._id);
    await writeEntries(db, current.firm, [...others, { id: current._id, updated_at: updatedAt.getTime() }]);
    return next;
  });
}

export async function deleteWorkflow(services: Services, workflow: WorkflowMeta): Promise<void> {
  const db = services.mongo.db;
  await withFirmWorkflowsLock(services, workflow.firm, async () => {
    const current = await readMeta(db, workflow.firm, workflow._id);
    if (current?.trigger_keys !== undefined)
      await unindexTriggers(services, current._id, current.trigger_keys);
    const entries = await readEntries(db, workflow.firm);
    const remaining = entries.filter((e) => e.id !== workflow._id);
    if (remaining.length !== entries.length) await writeEntries(db, workflow.firm, remaining);
    const result = await workflows(db, workflow.firm).deleteOne({ _id: workflow._id });
    if (result.deletedCount === 0) throw notFound('workflow');
  });
}

/** Newest update first; ties by id, descending (the keyset order). */
const newestFirst = (a: DirectoryEntry, b: DirectoryEntry): number =>
  b.updated_at - a.updated_at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/**
 * A page of a firm's workflows, most recently updated first: at most `limit`, and fewer when
 * their graphs pass LIST_PAGE_BYTES. `next_cursor` continues after the page's last workflow
 * (keyset on updated_at and id: a workflow updated while a client pages moves to the front,
 * so it is neither repeated nor made to shift the rest). Undefined on the last page.
 */
export async function listWorkflows(
  services: Services,
  firm: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ workflows: WorkflowDoc[]; next_cursor: string | undefined }> {
  const db = services.mongo.db;
  const secret = services.config.sessionSecret;
  let entries = (await readEntries(db, firm)).slice().sort(newestFirst);
  if (cursor) {
    const { u, i } = decodeCursor(secret, CURSOR_SCOPE, firm, cursor);
    if (typeof u !== 'number' || typeof i !== 'string') throw invalidCursor();
    entries = entries.filter((e) => e.updated_at < u || (e.updated_at === u && e.id < i));
  }
  const page: WorkflowDoc[] = [];
  let bytes = 0;
  let next = 0;
  let last: DirectoryEntry | undefined;
  while (next < entries.length && page.length < limit && (page.length === 0 || bytes < LIST_PAGE_BYTES)) {
    const batch = entries.slice(next, next + Math.min(LIST_READ_CONCURRENCY, limit - page.length));
    const docs = await Promise.all(batch.map((e) => workflows(db, firm).findOne({ _id: e.id })));
    for (const [k, doc] of docs.entries()) {
      next += 1;
      last = batch[k];
      // Deleted since the directory was read (or left behind by a crash): skipped.
      if (doc === null || doc.firm !== firm) continue;
      page.push(doc);
      bytes += doc.nodes_json.length + doc.edges_json.length;
      if (page.length > 0 && bytes >= LIST_PAGE_BYTES) break;
    }
  }
  const next_cursor =
    next < entries.length && last !== undefined
      ? encodeCursor(secret, CURSOR_SCOPE, firm, { u: last.updated_at, i: last.id })
      : undefined;
  return { workflows: page, next_cursor };
}
