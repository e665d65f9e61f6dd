import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { keysetPage } from '../../platform/db/keyset-cursor.js';
import { cachedRead, cachedReadShared, changeCached, type Frozen } from '../../platform/db/read-cache.js';
import { invalidRequest, notFound, quote } from '../../platform/errors.js';
import { newId } from '../../platform/ids.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';
import { agentKeyTarget, noteProviderAgent, repointAgentKey } from './agent-keys.js';
import { findVoice } from './voices.js';

export interface IntakeQuestion {
  key: string;
  question: string;
}

export interface AgentDoc {
  _id: string;
  firm: string;
  agent_name: string;
  voice_id: string;
  language: string;
  prompt: string;
  begin_message: string;
  intake_questions: IntakeQuestion[];
  /**
   * The agent at the voice provider (Retell's agent_id), when it has one there. Calls send it
   * as override_agent_id on the platform's shared provider account, so only the platform may
   * set or change it (firms read it).
   */
  provider_agent_id?: string;
  created_at: Date;
  updated_at: Date;
}

/** What an intake agent asks when it was configured with no questions of its own. */
export const DEFAULT_INTAKE_QUESTIONS: IntakeQuestion[] = [
  { key: 'full_name', question: 'May I have your full name, please?' },
  { key: 'phone', question: 'What is the best phone number to reach you?' },
  { key: 'email', question: 'What is your email address?' },
  { key: 'case_type', question: 'What kind of legal matter is this about?' },
  { key: 'description', question: 'Briefly, what happened?' },
];

interface AgentInput {
  agent_name?: string;
  voice_id?: string;
  language?: string;
  prompt?: string;
  begin_message?: string;
  intake_questions?: IntakeQuestion[];
  provider_agent_id?: string;
}

const agents = (db: Db) => collection<AgentDoc>(db, COLLECTIONS.agents);

async function requireVoice(services: Services, voiceId: string) {
  const voice = await findVoice(services, voiceId);
  if (voice === undefined) {
    throw invalidRequest(
      `The voice ${quote(voiceId)} is not one of list-voices.`,
      [{ path: '/voice_id', message: 'is not a known voice' }],
      'unknown_voice',
    );
  }
  return voice;
}

function assertUniqueKeys(questions: IntakeQuestion[] | undefined): void {
  if (questions === undefined) return;
  const seen = new Set<string>();
  questions.forEach((q, i) => {
    if (seen.has(q.key)) {
      throw invalidRequest(`Intake question keys must be unique; ${quote(q.key)} repeats.`, [
        { path: `/intake_questions/${i}/key`, message: 'repeats an earlier key' },
      ]);
    }
    seen.add(q.key);
  });
}

export async function createAgent(
  services: Services,
  firm: string,
  input: AgentInput & { agent_name: string; voice_id: string },
): Promise<AgentDoc> {
  assertUniqueKeys(input.intake_questions);
  const voice = await requireVoice(services, input.voice_id);
  const now = new Date();
  const doc: AgentDoc = {
    _id: newId('agent', 12),
    firm,
    agent_name: input.agent_name,
    voice_id: input.voice_id,
    language: input.language ?? voice.language,
    prompt: input.prompt ?? '',
    begin_message: input.begin_message ?? `Hello, thank you for contacting us. I can help you get started.`,
    intake_questions: input.intake_questions ?? DEFAULT_INTAKE_QUESTIONS,
    ...(input.provider_agent_id === undefined ? {} : { provider_agent_id: input.provider_agent_id }),
    created_at: now,
    updated_at: now,
  };
  // Its key first, so that an agent with a provider agent id never lacks one (agent-keys.ts).
  await noteProviderAgent(services.mongo.db, doc);
  await agents(services.mongo.db).insertOne(doc);
  return doc;
}

/** The agent's point read by _id, as the read cache loads it. */
const loadAgent = (db: Db, agentId: string) => (): Promise<AgentDoc | null> =>
  agents(db).findOne({ _id: agentId });

/** The agent with that id, whoever owns it; null when there is none. */
export async function findAgent(db: Db, agentId: string): Promise<AgentDoc | null> {
  return cachedRead(db, COLLECTIONS.agents, agentId, loadAgent(db, agentId));
}

/**
 * Whether the firm has an agent whose provider agent id is `providerAgentId`, by point reads: its
 * key, then the agent it names (agent-keys.ts).
 */
export async function firmHasProviderAgent(db: Db, firm: string, providerAgentId: string): Promise<boolean> {
  return (await firmProviderAgentId(db, firm, providerAgentId)) !== null;
}

/**
 * Our id of the firm's agent whose provider agent id is `providerAgentId` (the agent a provider's
 * call names), by the same point reads; null when the firm has none.
 */
export async function firmProviderAgentId(
  db: Db,
  firm: string,
  providerAgentId: string,
): Promise<string | null> {
  const target = await agentKeyTarget(db, firm, providerAgentId);
  if (target === null) return null;
  const agent = await findAgent(db, target);
  if (agent !== null && agent.firm === firm && agent.provider_agent_id === providerAgentId) return agent._id;
  return repointAgentKey(db, firm, providerAgentId);
}

/**
 * The agent, which must belong to `firm` (create-outbound-call, create-chat): the read cache's own
 * document, frozen, not a copy (every such request reads it, none changes it).
 */
export async function getFirmAgent(db: Db, firm: string, agentId: string): Promise<Frozen<AgentDoc>> {
  // A point read by _id; the firm is checked on the document
  // (docs/operations.md#data-access-on-ferretdb-and-mongodb).
  const agent = await cachedReadShared(db, COLLECTIONS.agents, agentId, loadAgent(db, agentId));
  if (agent === null || agent.firm !== firm) {
    throw notFound('agent', `No agent ${quote(agentId)} belongs to the firm ${quote(firm)}.`);
  }
  return agent;
}

/**
 * Writes `input` over the agent. The whole document is replaced, so two updates at once take
 * turns under the agent's lock, each merging into the agent as read inside it: one built from the
 * request's earlier read would put back what the other changed.
 */
export async function updateAgent(services: Services, agent: AgentDoc, input: AgentInput): Promise<AgentDoc> {
  assertUniqueKeys(input.intake_questions);
  if (input.voice_id !== undefined) await requireVoice(services, input.voice_id);
  const changes = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  const db = services.mongo.db;
  return withRecordLock(services.redis, redisKeys(services.config).agentLock(agent._id), async () => {
    const current = await agents(db).findOne({ _id: agent._id });
    if (current === null || current.firm !== agent.firm) throw notFound('agent');
    const next: AgentDoc = { ...current, ...changes, updated_at: new Date() };
    // The key of the provider agent id sent first (written again when it is the same: an agent an
    // earlier version stored may lack it); an old id's key is left to go stale (agent-keys.ts).
    if (input.provider_agent_id !== undefined) await noteProviderAgent(db, next);
    const result = await changeCached(db, () => agents(db).replaceOne({ _id: agent._id }, next));
    if (result.matchedCount === 0) throw notFound('agent');
    return next;
  });
}

export async function deleteAgent(db: Db, agent: AgentDoc): Promise<void> {
  await changeCached(db, () => agents(db).deleteOne({ _id: agent._id }));
}

/**
 * One page of agents, newest first: a firm's, or every firm's (`firm` undefined, the platform's
 * list-agents). Keyset pages, so a list longer than a page is continued, never cut short unsaid.
 */
export async function listAgents(
  services: Services,
  firm: string | undefined,
  limit: number,
  cursor: string | undefined,
): Promise<{ agents: AgentDoc[]; next_cursor: string }> {
  const order = { primary: { field: 'created_at', kind: 'date' as const }, tie: '_id' };
  const page = await keysetPage(
    agents(services.mongo.db),
    // Every firm's list is scoped '*', which no firm slug can be.
    { secret: services.config.sessionSecret, scope: 'list-agents', firm: firm ?? '*', order },
    firm === undefined ? {} : { firm },
    limit,
    cursor,
  );
  return { agents: page.rows, next_cursor: page.next_cursor };
}

/** A firm's agents by name, newest first, at most `limit` (the widget test page's agent picker). */
export async function listFirmAgentNames(
  db: Db,
  firm: string,
  limit: number,
): Promise<Array<{ agent_id: string; agent_name: string }>> {
  const docs = await agents(db)
    .find({ firm }, { projection: { _id: 1, agent_name: 1, created_at: 1 } })
    .sort({ created_at: -1, _id: -1 })
    .limit(limit)
    .toArray();
  return docs.map((doc) => ({ agent_id: doc._id, agent_name: doc.agent_name }));
}
