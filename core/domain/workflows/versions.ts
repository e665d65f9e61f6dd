import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { bumpCacheVersion, copyIsCurrent, copyStamp, type CopyStamp } from '../../platform/cache-version.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { invalidRequest, notFound, quote } from '../../platform/errors.js';
import { firmEndpoints } from '../events/endpoints.js';
import { changeListeners } from '../events/listeners.js';
import { redisKeys } from '../../platform/redis-keys.js';
import type { WorkflowEdge, WorkflowNode } from './graph.js';
import { dataOf, runnableGraph, runnableProblems, TRIGGER } from './vocabulary.js';
import {
  readMeta,
  withFirmWorkflowsLock,
  workflows,
  type WorkflowDoc,
  type WorkflowMeta,
} from './workflows.js';
import { replaceById } from '../../platform/db/upsert.js';

// Activation and versions (docs/workflows.md#activation). Activating a workflow checks that it
// can run, saves its graph as a version (`<workflow id>:v<n>`, never changed afterwards) and lists
// it in the trigger index of each event it starts on; an edit while active saves the next version
// and lists that one: runs started before keep the version they started with. All of it happens
// under the firm's workflows lock (the writes of a firm's workflows take turns).

export interface WorkflowVersionDoc {
  _id: string;
  firm: string;
  workflow_id: string;
  version: number;
  name: string;
  nodes_json: string;
  edges_json: string;
  created_at: Date;
}

/** `<firm>|<event pattern>`: the active workflows an event type (or group) starts. */
export interface WorkflowTriggerIndexDoc {
  _id: string;
  firm: string;
  /**
   * `since`: when the workflow began listening under this key (ms; its activation, kept through
   * edits while active), so an event recorded before it starts no run of it when fanned out again
   * (a retried step records it again). Absent on entries written before 2026-12-02: no bound.
   */
  entries: Array<{ workflow_id: string; version_id: string; since?: number }>;
}

export const versionsCollection = (db: Db) =>
  collection<WorkflowVersionDoc>(db, COLLECTIONS.workflowVersions);
export const triggerIndex = (db: Db) => collection<WorkflowTriggerIndexDoc>(db, COLLECTIONS.workflowTriggers);

export const versionIdOf = (workflowId: string, version: number): string => `${workflowId}:v${version}`;
export const triggerKeyOf = (firm: string, pattern: string): string => `${firm}|${pattern}`;

/**
 * 400 naming each node that would keep the graph from running (only active workflows are checked),
 * a `webhook` node naming no webhook endpoint of the firm included.
 */
export async function assertRunnable(
  services: Services,
  firm: string,
  nodes: WorkflowNode[],
  edges: WorkflowEdge[],
): Promise<void> {
  const problems = runnableProblems(nodes, edges);
  const endpointIds = new Set((await firmEndpoints(services, firm)).map((e) => e._id));
  nodes.forEach((node, i) => {
    const id = node.type === 'webhook' ? dataOf(node).endpoint_id : undefined;
    if (typeof id === 'string' && id !== '' && !endpointIds.has(id)) {
      problems.push({
        path: `/nodes/${i}/data/endpoint_id`,
        message: `names no webhook endpoint of this firm: ${quote(id)} (node ${quote(node.id)})`,
      });
    }
  });
  if (problems.length === 0) return;
  const first = problems[0]!;
  throw invalidRequest(
    `An active workflow must be able to run: ${first.path} ${first.message}` +
      (problems.length > 1 ? `; and ${problems.length - 1} more.` : '.'),
    problems,
  );
}

/** Saves the workflow's graph as its next version; returns the version's number. */
export async function saveVersion(services: Services, doc: WorkflowDoc): Promise<number> {
  const version = (doc.version ?? 0) + 1;
  await replaceById(versionsCollection(services.mongo.db), versionIdOf(doc._id, version), {
    firm: doc.firm,
    workflow_id: doc._id,
    version,
    name: doc.name,
    nodes_json: doc.nodes_json,
    edges_json: doc.edges_json,
    created_at: new Date(),
  });
  return version;
}

async function setEntry(
  services: Services,
  firm: string,
  key: string,
  workflowId: string,
  versionId: string | null,
): Promise<void> {
  const index = triggerIndex(services.mongo.db);
  // A change to the firm's event listeners (core/domain/events/listeners.ts).
  await changeListeners(services, firm, async () => {
    const current = await index.findOne({ _id: key });
    const own = current?.entries.find((e) => e.workflow_id === workflowId);
    const entries = (current?.entries ?? []).filter((e) => e.workflow_id !== workflowId);
    if (versionId !== null) {
      // Listening since its activation: an edit while active keeps the time it began.
      const since = own === undefined ? Date.now() : (own.since ?? 0);
      entries.push({ workflow_id: workflowId, version_id: versionId, since });
    }
    if (entries.length === 0) await index.deleteOne({ _id: key });
    else await replaceById(index, key, { firm, entries });
    // A fresh random version, not a counter (core/platform/cache-version.ts).
    await bumpCacheVersion(services.redis, redisKeys(services.config).workflowTriggersVersion(firm));
  });
}

type TriggerEntries = WorkflowTriggerIndexDoc['entries'];
const cachedTriggers = new Map<string, { stamp: CopyStamp; entries: TriggerEntries }>();

/**
 * The index's entries under `keys` (all of one firm), as each event's fan-out reads them: cached
 * per process, read again (a point read per key) whenever the firm's version (`version`, read by
 * the caller from workflowTriggersVersion), a new random value after every write of its index,
 * has changed, and at least once a minute (core/platform/cache-version.ts), so an activation
 * applies to the next event without a read for each.
 */
export async function triggerEntries(
  services: Services,
  version: string | null,
  keys: string[],
): Promise<TriggerEntries[]> {
  const missing = keys.filter((k) => !copyIsCurrent(cachedTriggers.get(k)?.stamp, version));
  if (missing.length > 0) {
    // Point reads by _id (FerretDB serves an `_id` `$in` by a scan of the collection).
    const index = triggerIndex(services.mongo.db);
    const docs = await Promise.all(missing.map((k) => index.findOne({ _id: k })));
    missing.forEach((k, i) => {
      cachedTriggers.delete(k);
      if (cachedTriggers.size >= 10_000) cachedTriggers.delete(cachedTriggers.keys().next().value!);
      cachedTriggers.set(k, { stamp: copyStamp(version), entries: docs[i]?.entries ?? [] });
    });
  }
  return keys.map((k) => cachedTriggers.get(k)?.entries ?? []);
}

/** Lists the workflow's current version under each event it starts on; returns those keys. */
export async function indexTriggers(
  services: Services,
  doc: WorkflowDoc,
  previous: string[],
): Promise<string[]> {
  const nodes = JSON.parse(doc.nodes_json) as WorkflowNode[];
  const patterns = new Set(
    nodes
      .filter((n) => n.type === TRIGGER)
      .map((n) => dataOf(n).event)
      .filter((e): e is string => typeof e === 'string'),
  );
  const keys = [...patterns].map((p) => triggerKeyOf(doc.firm, p));
  const versionId = versionIdOf(doc._id, doc.version ?? 1);
  for (const key of previous) if (!keys.includes(key)) await setEntry(services, doc.firm, key, doc._id, null);
  for (const key of keys) await setEntry(services, doc.firm, key, doc._id, versionId);
  return keys;
}

export async function unindexTriggers(services: Services, workflowId: string, keys: string[]): Promise<void> {
  const firm = keys[0]?.split('|')[0] ?? '';
  for (const key of keys) await setEntry(services, firm, key, workflowId, null);
}

export interface ActivationView {
  id: string;
  active: boolean;
  version: number | null;
}

/** Activates the workflow (400 naming the node when it cannot run); a new version when its graph changed. */
export async function activateWorkflow(services: Services, meta: WorkflowMeta): Promise<ActivationView> {
  const db = services.mongo.db;
  return withFirmWorkflowsLock(services, meta.firm, async () => {
    const doc = await workflows(db, meta.firm).findOne({ _id: meta._id });
    if (doc === null || doc.firm !== meta.firm) throw notFound('workflow');
    await assertRunnable(
      services,
      meta.firm,
      JSON.parse(doc.nodes_json) as WorkflowNode[],
      JSON.parse(doc.edges_json) as WorkflowEdge[],
    );
    let version = doc.version;
    const saved =
      version === undefined
        ? null
        : await versionsCollection(db).findOne({ _id: versionIdOf(doc._id, version) });
    // The last version is this graph already (deactivated, then activated again): it is kept.
    if (saved === null || saved.nodes_json !== doc.nodes_json || saved.edges_json !== doc.edges_json) {
      version = await saveVersion(services, doc);
    }
    const next = { ...doc, version: version!, active: true };
    const keys = await indexTriggers(services, next, doc.trigger_keys ?? []);
    await workflows(db, meta.firm).updateOne(
      { _id: doc._id },
      { $set: { active: true, version: version!, trigger_keys: keys } },
    );
    return { id: doc._id, active: true, version: version! };
  });
}

export async function deactivateWorkflow(services: Services, meta: WorkflowMeta): Promise<ActivationView> {
  const db = services.mongo.db;
  return withFirmWorkflowsLock(services, meta.firm, async () => {
    const current = await readMeta(db, meta.firm, meta._id);
    if (current === null) throw notFound('workflow');
    await unindexTriggers(services, current._id, current.trigger_keys ?? []);
    await workflows(db, meta.firm).updateOne(
      { _id: current._id },
      { $set: { active: false, trigger_keys: [] } },
    );
    return { id: current._id, active: false, version: current.version ?? null };
  });
}

/** A parsed version (versions never change: kept in memory once read). */
export interface LoadedVersion {
  doc: WorkflowVersionDoc;
  nodes: WorkflowNode[];
  edges: WorkflowEdge[];
  graph: ReturnType<typeof runnableGraph>;
}

const loaded = new Map<string, LoadedVersion>();
const MAX_LOADED = 500;

export async function loadVersion(db: Db, versionId: string): Promise<LoadedVersion | null> {
  const cached = loaded.get(versionId);
  if (cached !== undefined) return cached;
  const doc = await versionsCollection(db).findOne({ _id: versionId });
  if (doc === null) return null;
  const nodes = JSON.parse(doc.nodes_json) as WorkflowNode[];
  const edges = JSON.parse(doc.edges_json) as WorkflowEdge[];
  const value = { doc, nodes, edges, graph: runnableGraph(nodes, edges) };
  if (loaded.size >= MAX_LOADED) loaded.delete(loaded.keys().next().value!);
  loaded.set(versionId, value);
  return value;
}
