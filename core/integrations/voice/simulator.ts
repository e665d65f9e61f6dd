import { randomBytes } from 'node:crypto';
import type { Db } from 'mongodb';
import type { Config } from '../../platform/config.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import type { Queues } from '../../../jobs/queues.js';
import { enqueueSimulatorStep } from '../../../jobs/calls.js';
import {
  ProviderError,
  type PlaceCallRequest,
  type ProviderCall,
  type VoiceEntry,
  type VoiceProvider,
} from './provider.js';
import { SIMULATOR_VOICES } from './simulator-voices.js';

// The built-in voice provider (CONTRACT §5). Like a real provider it keeps its own records of
// the calls it placed (simulator_calls) and later reports on them through the firm's public
// webhook (see simulator-engine.ts). Number rules: ...0000 is not answered, ...9999 fails.

export type SimulatedCallStatus = 'registered' | 'ongoing' | 'ended' | 'not_connected';

/** A provider-side call, shaped like Retell's call object. */
export interface SimulatorCallDoc {
  /** The provider's call id (what Retell calls call_id). */
  _id: string;
  agent_id: string;
  from_number: string;
  to_number: string;
  direction: 'outbound';
  call_type: 'phone_call';
  call_status: SimulatedCallStatus;
  outcome: 'answered' | 'no_answer';
  metadata: { call_id: string; firm: string; agent_id: string };
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
  created_at: Date;
}

export const simulatorCalls = (db: Db) => collection<SimulatorCallDoc>(db, COLLECTIONS.simulatorCalls);

/** The caller id the simulator shows when the firm has no from_number. */
export const SIMULATOR_FROM_NUMBER = '+15550100000';

export const simulatorRules = {
  isUnanswered: (toNumber: string): boolean => toNumber.endsWith('0000'),
  failsAtProvider: (toNumber: string): boolean => toNumber.endsWith('9999'),
};

export class SimulatorProvider implements VoiceProvider {
  readonly name = 'simulator' as const;
  constructor(
    private readonly config: Config,
    private readonly queues: Queues,
    private readonly db: Db,
  ) {}

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
    const doc: SimulatorCallDoc = {
      _id: `sim_${randomBytes(16).toString('hex')}`,
      agent_id: request.providerAgentId ?? request.agentId,
      from_number: request.fromNumber ?? SIMULATOR_FROM_NUMBER,
      to_number: request.toNumber,
      direction: 'outbound',
      call_type: 'phone_call',
      call_status: 'registered',
      outcome: simulatorRules.isUnanswered(request.toNumber) ? 'no_answer' : 'answered',
      metadata: { call_id: request.callId, firm: request.firm, agent_id: request.agentId },
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
    await simulatorCalls(this.db).insertOne(doc);
    try {
      // It rings for half of SIM_CALL_MS, then talks for the other half.
      await enqueueSimulatorStep(
        this.queues,
        { callId: request.callId, providerCallId: doc._id },
        Math.floor(this.config.simCallMs / 2),
      );
    } catch (err) {
      // Not enqueued means never played: withdraw the call, so it was certainly not placed.
      await simulatorCalls(this.db)
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
    const doc = await simulatorCalls(this.db).findOne(
      { 'metadata.call_id': callId },
      { sort: { created_at: -1 } },
    );
    return doc === null ? null : { providerCallId: doc._id, status: doc.call_status };
  }
}
