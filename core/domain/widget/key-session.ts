// POST /api/widget/session (docs/widget.md#sessions): a publishable widget key plus the Origin of
// the page asking becomes a one-hour widget token bound to that origin and one agent of the firm.
// Everything is checked before a token is minted: the key exists (401 otherwise, counted against
// the address like any bad credential), the page's origin is one the key allows (403
// origin_not_allowed), a key with `challenge: "altcha"` has a solution (400 altcha_required, not
// counted as a session), the address is within its sessions per hour with this key (429), the
// solution is a solved challenge, used once (400/409: core/domain/widget/altcha.ts), and the agent
// belongs to the key's firm (404).
import { getFirmAgent, listFirmAgentNames } from '../agents/agents.js';
import { mintWidgetToken } from '../access/widget-token.js';
import { notFound, quote, unauthorized } from '../../platform/errors.js';
import type { Services } from '../../wiring/services.js';
import { MAX_CHAT_MESSAGES } from '../chats/chat-limits.js';
import { altchaRequired, spendSolution } from './altcha.js';
import { originNotAllowed } from './origins.js';
import { countWidgetSession } from './widget-limits.js';
import { observeChangeEpoch } from '../../platform/db/read-cache.js';
import { findWidgetKeyByKey, type WidgetKeyDoc } from './widget-keys.js';

export interface KeySessionRequest {
  key: string;
  /** The request's Origin header; undefined when it had none. */
  origin: string | undefined;
  /** The client's address (per-address limit). */
  address: string;
  agentId?: string | undefined;
  /** The solved ALTCHA challenge (base64 JSON), for a key that asks for one. */
  altcha?: string | undefined;
}

export interface KeySession {
  token: string;
  expiresAt: Date;
  agent: { agent_id: string; agent_name: string };
  settings: { challenge: 'altcha' | null; max_messages_per_chat: number };
}

/** The key a request names and the page's origin, if that origin is one the key allows. */
export async function requireKeyForOrigin(
  services: Services,
  key: string,
  origin: string | undefined,
): Promise<{ doc: WidgetKeyDoc; origin: string }> {
  const doc = await findWidgetKeyByKey(services.mongo.db, key);
  if (doc === null) throw unauthorized('The widget key is unknown or was deleted.');
  if (origin === undefined || !doc.allowed_origins.includes(origin)) throw originNotAllowed(origin);
  return { doc, origin };
}

/** The agent a session chats with: the one asked for, else the key's, else the firm's newest. */
async function sessionAgent(
  services: Services,
  doc: WidgetKeyDoc,
  agentId: string | undefined,
): Promise<{ agent_id: string; agent_name: string }> {
  const db = services.mongo.db;
  const wanted = agentId ?? doc.agent_id ?? undefined;
  if (wanted !== undefined) {
    const agent = await getFirmAgent(db, doc.firm, wanted);
    return { agent_id: agent._id, agent_name: agent.agent_name };
  }
  const [newest] = await listFirmAgentNames(db, doc.firm, 1);
  if (newest === undefined) {
    throw notFound('agent', `The firm ${quote(doc.firm)} has no agent to chat with yet.`);
  }
  return newest;
}

/** The key a challenge request names, from a page on one of its origins (as a session's). */
export async function keyForChallenge(
  services: Services,
  key: string,
  origin: string | undefined,
): Promise<WidgetKeyDoc> {
  await observeChangeEpoch(services.mongo.db);
  return (await requireKeyForOrigin(services, key, origin)).doc;
}

/**
 * A widget token for a key, from a page on one of its origins, within the address's hourly
 * sessions; bound to that origin and the session's agent.
 */
export async function openKeySession(services: Services, request: KeySessionRequest): Promise<KeySession> {
  await observeChangeEpoch(services.mongo.db);
  const { doc, origin } = await requireKeyForOrigin(services, request.key, request.origin);
  // The widget asks first without a solution, to learn whether the key wants one: that answer is
  // no session, so it does not count against the address's sessions of the hour.
  if (doc.challenge === 'altcha' && request.altcha === undefined) throw altchaRequired();
  await countWidgetSession(services, doc._id, request.address);
  if (doc.challenge === 'altcha') await spendSolution(services, doc, request.altcha);
  const agent = await sessionAgent(services, doc, request.agentId);
  const minted = await mintWidgetToken(doc.firm, services.config.sessionSecret, {
    key: doc._id,
    origin,
    agent: agent.agent_id,
    // The solution was spent above: this session's chats may book (widget-booking-limits.ts).
    altcha: doc.challenge === 'altcha',
  });
  return {
    token: minted.token,
    expiresAt: minted.expiresAt,
    agent,
    settings: { challenge: doc.challenge, max_messages_per_chat: MAX_CHAT_MESSAGES },
  };
}
