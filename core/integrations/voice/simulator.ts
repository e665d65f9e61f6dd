import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim } from '../../platform/db/claim.js';
import { RecentMemo } from '../../platform/recent-memo.js';
import { secretBox } from '../../platform/secrets/data-keys.js';
import type { Sealed } from '../../platform/secrets/envelope.js';
import { sealedFieldName } from '../../platform/secrets/sealed-fields.js';
import {
  ProviderError,
  type CallAgentProfile,
  type PlaceCallRequest,
  type ProviderCall,
  type ProviderCallObject,
  type VoiceEntry,
  type VoiceProvider,
} from './provider.js';
import { SIMULATOR_VOICES } from './simulator-voices.js';
import { reachesVoicemail } from './simulator-voicemail.js';
import type { SimulatedBooking } from './simulator-tools.js';

// The built-in voice provider (docs/calls.md#the-simulator). Like a real provider it keeps its own
// records of the calls it placed (simulator_calls) and later reports on them through the firm's public
// webhook (see simulator-engine.ts). Everything it needs (the agent's script, the webhook
// target) comes with the call, as a provider's own configuration would: it reads nothing of
// ours. Number rules: ...0000 is not answered, ...9999 fails, ...7777 reaches voicemail, ...2222
// asks for a consultation and books it through the firm's tools (simulator-tools.ts), ...3333 says
// "please stop calling me" (an opt-out: simulator-script.ts).

export type SimulatedCallStatus = 'registered' | 'ongoing' | 'ended' | 'not_connected';

/**
 * A provider-side call, shaped like Retell's call object, as its steps play it: what a step job
 * carries (JSON, so no dates; the steps read none).
 */
export interface SimulatedCall {
  /** The provider's call id (what Retell calls call_id). */
  _id: string;
  agent_id: string;
  from_number: string;
  to_number: string;
  direction: 'outbound';
  call_type: 'phone_call';
  call_status: SimulatedCallStatus;
  outcome: 'answered' | 'no_answer' | 'voicemail';
  metadata: { call_id: string; firm: string; agent_id: string };
  /** The agent as the call plays it (what the simulated agent says). */
  agent: CallAgentProfile;
  /** Where the call's events go, and the secret they are signed with (sealed with the firm's data key). */
  webhook: { url: string; secret: Sealed | string };
  retell_llm_dynamic_variables: Record<string, string>;
  start_timestamp: number | null;
  end_timestamp: number | null;
  /** When the simulated caller hangs up, once answered. */
  hangup_at: number | null;
  duration_ms: number | null;
  disconnection_reason: string | null;
  transcript: string | null;
  call_analysis: Record<string, unknown> | null;
  /** Webhook events already delivered (a retried step does not send them again). */
  delivered: string[];
  /** A 2222 caller's booking, once the tools answered (simulator-tools.ts); absent before. */
  booking?: SimulatedBooking | null;
}

/** A provider-side call as the simulator keeps it (simulator_calls). */
export interface SimulatorCallDoc extends SimulatedCall {
  created_at: Date;
}

/** The call as a step job carries it: all but its creation date. */
export function carriedCall(doc: SimulatedCall & { created_at?: unknown }): SimulatedCall {
  const { created_at: _created, ...call } = doc;
  return call;
}

/** The field the webhook secret is sealed as. */
const SIMULATOR_WEBHOOK_SECRET = sealedFieldName(COLLECTIONS.simulatorCalls, 'webhook.secret');

/** The key a simulated call's events and tool calls are signed with, opened. */
/**
 * Opened webhook secrets by firm and sealed value, so a call's three events (and its tools' calls)
 * read the firm's data key once rather than each time. Each call seals its own: kept while the
 * call goes on (a minute after its last use), at most 10,000. Exported for its bound's test.
 */
export const openedSecrets = new RecentMemo<string, string>(10_000, 60_000);

export async function simulatorWebhookSecret(db: Db, call: SimulatedCall): Promise<string> {
  const stored = call.webhook.secret;
  if (typeof stored === 'string') return stored;
  const memo = `${call.metadata.firm}|${stored.iv}|${stored.data}|${stored.tag}`;
  const known = openedSecrets.get(memo);
  if (known !== undefined) return known;
  const secret = await secretBox(db, call.metadata.firm).open(SIMULATOR_WEBHOOK_SECRET, stored);
  openedSecrets.set(memo, secret);
  return secret;
}

export const simulatorCalls = (db: Db) => collection<SimulatorCallDoc>(db, COLLECTIONS.simulatorCalls);

/** The caller id the simulator shows when the firm has no from_number. */
const SIMULATOR_FROM_NUMBER = '+15550100000';

const simulatorRules = {
  isUnanswered: (toNumber: string): boolean => toNumber.endsWith('0000'),
  failsAtProvider: (toNumber: string): boolean => toNumber.endsWith('9999'),
};

/**
 * Plays one placed call on (the simulator queue's job, enqueued by whoever wires the simulator),
 * with the call as placed, so its first step need not read it back.
 */
type ScheduleSimulatorStep = (
  step: { callId: string; providerCallId: string; call: SimulatedCall },
  delayMs: number,
) => Promise<void>;

/**
 * The simulator's id for the call it places for our call id: one call per call id, so a retried
 * dial finds the first (as Retell's list-calls by metadata would) and findCall is a point read.
 */
const simulatorCallId = (callId: string): string =>
  `sim_${createHash('sha256').update(callId).digest('hex').slice(0, 32)}`;

export class SimulatorProvider implements VoiceProvider {
  readonly name = 'simulator' as const;
  readonly playsOurScript = true;
  constructor(private readonly options: { db: Db; simCallMs: number; schedule: ScheduleSimulatorStep }) {}

  async listVoices(): Promise<VoiceEntry[]> {
    return SIMULATOR_VOICES;
  }

  async placeCall(request: PlaceCallRequest): Promise<ProviderCall> {
    if (simulatorRules.failsAtProvider(request.toNumber)) {
      throw new ProviderError(
        'rejected',
        'The simulated carrier could not place the call (numbers ending 9999 fail).',
        {
          status: 422,
        },
      );
    }
    if (request.agent === undefined || request.webhook === undefined) {
      throw new ProviderError(
        'rejected',
        'The simulator needs the agent and the webhook target of the call.',
      );
    }
    const db = this.options.db;
    const doc: SimulatorCallDoc = {
      _id: simulatorCallId(request.callId),
      agent_id: request.providerAgentId ?? request.agentId,
      from_number: request.fromNumber ?? SIMULATOR_FROM_NUMBER,
      to_number: request.toNumber,
      direction: 'outbound',
      call_type: 'phone_call',
      call_status: 'registered',
      outcome: simulatorRules.isUnanswered(request.toNumber)
        ? 'no_answer'
        : reachesVoicemail(request.toNumber)
          ? 'voicemail'
          : 'answered',
      metadata: { call_id: request.callId, firm: request.firm, agent_id: request.agentId },
      agent: request.agent,
      webhook: {
        url: request.webhook.url,
        secret: await secretBox(db, request.firm).seal(SIMULATOR_WEBHOOK_SECRET, request.webhook.secret),
      },
      retell_llm_dynamic_variables: request.dynamicVariables,
      start_timestamp: null,
      end_timestamp: null,
      hangup_at: null,
      duration_ms: null,
      disconnection_reason: null,
      transcript: null,
      call_analysis: null,
      delivered: [],
      created_at: new Date(),
    };
    if (!(await claim(simulatorCalls(db), doc))) {
      const existing = await simulatorCalls(db).findOne({ _id: doc._id });
      if (existing !== null) {
        await this.keepPlaying(existing);
        return { providerCallId: existing._id, status: existing.call_status };
      }
    }
    try {
      // It rings for half of SIM_CALL_MS, then talks for the other half.
      await this.options.schedule(
        { callId: request.callId, providerCallId: doc._id, call: carriedCall(doc) },
        Math.floor(this.options.simCallMs / 2),
      );
    } catch (err) {
      // Not enqueued means never played: withdraw the call, so it was certainly not placed.
      await simulatorCalls(db)
        .deleteOne({ _id: doc._id })
        .catch(() => {});
      throw new ProviderError(
        'retryable',
        `The simulator could not schedule the call: ${(err as Error).message}`,
        {
          callMayExist: false,
          cause: err,
        },
      );
    }
    return { providerCallId: doc._id, status: doc.call_status };
  }

  async findCall(callId: string): Promise<ProviderCall | null> {
    const doc = await simulatorCalls(this.options.db).findOne({ _id: simulatorCallId(callId) });
    if (doc === null) return null;
    await this.keepPlaying(doc);
    return { providerCallId: doc._id, status: doc.call_status };
  }

  /**
   * The simulator's call as a get-call would answer it: what its webhooks carried so far (the
   * end's fields once it ended, the analysis once analysed). A call that lost its next step goes
   * on playing (keepPlaying), as a provider's call does.
   */
  async getCall(providerCallId: string): Promise<ProviderCallObject | null> {
    const doc = await simulatorCalls(this.options.db).findOne({ _id: providerCallId });
    if (doc === null) return null;
    await this.keepPlaying(doc);
    const live = doc.call_status === 'registered' || doc.call_status === 'ongoing';
    return retellCallPayload(doc, live ? 'call_started' : 'call_analyzed') as ProviderCallObject;
  }

  /**
   * A call the simulator holds goes on playing, as a provider's call does whatever happens to
   * its client: a process that died between recording the call and scheduling its step left it
   * without one. The step's job id derives from the call, so this adds nothing when it exists.
   */
  private async keepPlaying(doc: SimulatorCallDoc): Promise<void> {
    if (doc.call_status !== 'registered' && doc.call_status !== 'ongoing') return;
    const due = doc.created_at.getTime() + Math.floor(this.options.simCallMs / 2);
    await this.options.schedule(
      { callId: doc.metadata.call_id, providerCallId: doc._id, call: carriedCall(doc) },
      due - Date.now(),
    );
  }
}

/**
 * Retell's `call` object as far as every delivery about a live or finished call carries it: the
 * webhook events add their own fields (simulator-engine.ts), the custom-function calls send it
 * as it is while the call is on (simulator-tools.ts).
 */
export function retellCallObject(call: SimulatedCall, callStatus: string): Record<string, unknown> {
  const payload: Record<string, unknown> = {
    call_id: call._id,
    call_type: call.call_type,
    agent_id: call.agent_id,
    // Retell numbers each published version of an agent; the simulator's agents have one version.
    agent_version: 1,
    direction: call.direction,
    from_number: call.from_number,
    to_number: call.to_number,
    call_status: callStatus,
    metadata: call.metadata,
    retell_llm_dynamic_variables: call.retell_llm_dynamic_variables,
  };
  if (call.start_timestamp !== null) payload.start_timestamp = call.start_timestamp;
  return payload;
}

export type SimulatorEvent = 'call_started' | 'call_ended' | 'call_analyzed';

/** Retell's `call` object for an event (call_analysis only on call_analyzed, as Retell sends it). */
export function retellCallPayload(call: SimulatedCall, event: SimulatorEvent): Record<string, unknown> {
  const payload = retellCallObject(call, call.call_status);
  if (event !== 'call_started') {
    payload.end_timestamp = call.end_timestamp;
    payload.duration_ms = call.duration_ms;
    payload.disconnection_reason = call.disconnection_reason;
    if (call.transcript !== null) payload.transcript = call.transcript;
  }
  if (event === 'call_analyzed' && call.call_analysis !== null) payload.call_analysis = call.call_analysis;
  return payload;
}
