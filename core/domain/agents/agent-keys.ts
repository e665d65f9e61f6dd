import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import type { AgentDoc } from './agents.js';
import { replaceById } from '../../platform/db/upsert.js';

// Whether a firm has an agent with a provider agent id (a delivery signed with the platform's
// RETELL_API_KEY is the firm's when its call is on one: docs/webhooks.md#whose-call), by point
// reads: FerretDB scans the whole agents table, every firm's, for {firm, provider_agent_id}
// (docs/operations.md#data-access-on-ferretdb-and-mongodb).
//
// A key document `<firm>|<provider agent id>` names an agent of the firm that had that id when
// it was written. It is written before the agent is (create-agent, update-agent), so an agent
// with the id never lacks one; it is only ever replaced, never deleted (a delete could remove the
// key another agent just wrote, FerretDB having no conditional delete to rely on). So it is a
// pointer that may have gone stale: the agent it names is read (through the read cache) and
// checked, and a stale key is followed by the one query on the firm's agents, which repoints it.
// (A key that no agent of the firm has any more keeps costing that query: a call on an agent the
// firm gave up, which the check then refuses.)
//
// Agents stored before the keys existed: a firm's marker `*|<firm>` says that its keys are
// complete. Until it is written, an absent key is not believed either: the firm's agents are
// read once (the same query), a key written for each, then the marker.

interface AgentKeyDoc {
  _id: string;
  /** The agent the key was written for (a stale key's agent may since have another id or none). */
  agent?: string;
  /** On a firm's marker: when its agents' keys were completed. */
  completed_at?: Date;
  updated_at: Date;
}

const agentKeys = (db: Db) => collection<AgentKeyDoc>(db, COLLECTIONS.agentKeys);
const keyOf = (firm: string, providerAgentId: string) => `${firm}|${providerAgentId}`;
// No slug starts with `*` (FIRM_SLUG_PATTERN), so no key is a marker.
const markerOf = (firm: string) => `*|${firm}`;

/** Points the firm's key for the agent's provider agent id at the agent (before the agent is written). */
export async function noteProviderAgent(
  db: Db,
  agent: Pick<AgentDoc, '_id' | 'firm' | 'provider_agent_id'>,
): Promise<void> {
  if (agent.provider_agent_id === undefined) return;
  const _id = keyOf(agent.firm, agent.provider_agent_id);
  await replaceById(agentKeys(db), _id, { agent: agent._id, updated_at: new Date() });
}

/** The query the keys stand in for: an agent of the firm with that provider agent id (a scan on FerretDB). */
async function queryFirmAgent(db: Db, firm: string, providerAgentId: string): Promise<string | null> {
  const found = await collection<AgentDoc>(db, COLLECTIONS.agents).findOne(
    { firm, provider_agent_id: providerAgentId },
    { projection: { _id: 1 } },
  );
  return found?._id ?? null;
}

/**
 * Writes a key for each of the firm's agents with a provider agent id, then the firm's marker;
 * returns the agent each key was written for, by provider agent id.
 */
async function completeFirmKeys(db: Db, firm: string): Promise<Map<string, string>> {
  const cursor = collection<AgentDoc>(db, COLLECTIONS.agents).find(
    { firm, provider_agent_id: { $exists: true } },
    { projection: { _id: 1, firm: 1, provider_agent_id: 1 } },
  );
  const written = new Map<string, string>();
  for await (const agent of cursor) {
    await noteProviderAgent(db, agent);
    written.set(agent.provider_agent_id!, agent._id);
  }
  const _id = markerOf(firm);
  const now = new Date();
  await replaceById(agentKeys(db), _id, { completed_at: now, updated_at: now });
  return written;
}

/**
 * The agent the firm's key for a provider agent id was written for (to be checked: it may be
 * stale); null when there is none. While the firm's keys may be incomplete (no marker), they are
 * completed first.
 */
export async function agentKeyTarget(db: Db, firm: string, providerAgentId: string): Promise<string | null> {
  const key = await agentKeys(db).findOne({ _id: keyOf(firm, providerAgentId) });
  if (key !== null) return key.agent ?? null;
  if ((await agentKeys(db).findOne({ _id: markerOf(firm) })) !== null) return null;
  return (await completeFirmKeys(db, firm)).get(providerAgentId) ?? null;
}

/**
 * After a stale key (its agent deleted or given another id): the firm's agent that has the id now,
 * by the query the keys stand in for, and the key pointed at it; null when none has.
 */
export async function repointAgentKey(db: Db, firm: string, providerAgentId: string): Promise<string | null> {
  const other = await queryFirmAgent(db, firm, providerAgentId);
  if (other !== null) await noteProviderAgent(db, { _id: other, firm, provider_agent_id: providerAgentId });
  return other;
}
