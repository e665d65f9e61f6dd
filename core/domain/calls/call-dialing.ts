import type { Services } from '../../wiring/services.js';
import { ProviderError, type ProviderCall } from '../../integrations/voice/provider.js';
import { FINISHED_RANK, callsCollection, type CallDoc } from './calls.js';
import { withCallLock } from './call-lock.js';

// Placing an outbound call with the provider, at most once per call_id. The dial is marked in
// MongoDB before the provider is called; when a later attempt finds the mark without a
// recorded outcome (a crash, a timeout, a 5xx), it asks the provider for a call carrying our
// call id before dialling again. Every write holds the call's lock (call-lock.ts).

export type DialOutcome = 'placed' | 'found_at_provider' | 'already_placed' | 'already_finished' | 'missing';

export async function placeOutboundCall(services: Services, callId: string): Promise<DialOutcome> {
  const db = services.mongo.db;
  const call = await callsCollection(db).findOne({ _id: callId });
  if (call === null) return 'missing'; // the request that created it rolled back
  if (call.provider_call_id !== null) return 'already_placed';
  if (call.finished) return 'already_finished';

  if (call.dial.state === 'dialing') {
    const found = await services.voice.findCall(callId, call.firm);
    if (found !== null) {
      await recordPlaced(services, call, found);
      return 'found_at_provider';
    }
  }

  // The mark: only one attempt can move the dial from the version it read.
  const marked = await withCallLock(services, call.firm, callId, () =>
    callsCollection(db).updateOne(
      { _id: callId, provider_call_id: null, 'dial.attempts': call.dial.attempts },
      {
        $set: { 'dial.state': 'dialing', 'dial.marked_at': new Date(), updated_at: new Date() },
        $inc: { 'dial.attempts': 1 },
      },
    ),
  );
  if (marked.matchedCount === 0) {
    throw new ProviderError('retryable', 'The call changed while it was being dialled; checking again.', {
      callMayExist: true,
    });
  }

  let placed: ProviderCall;
  try {
    placed = await services.voice.placeCall({
      callId,
      firm: call.firm,
      agentId: call.agent_id ?? '',
      ...(call.provider_agent_id === undefined ? {} : { providerAgentId: call.provider_agent_id }),
      ...(call.from_number === null ? {} : { fromNumber: call.from_number }),
      toNumber: call.to_number ?? '',
      dynamicVariables: call.dynamic_variables,
    });
  } catch (err) {
    const failure =
      err instanceof ProviderError
        ? err
        : new ProviderError('retryable', `The voice provider failed: ${(err as Error).message}`, {
            cause: err,
          });
    // A definite "no" from the provider clears the mark: the next attempt may dial at once.
    await withCallLock(services, call.firm, callId, () =>
      callsCollection(db).updateOne(
        { _id: callId, 'dial.state': 'dialing' },
        {
          $set: {
            ...(failure.callMayExist ? {} : { 'dial.state': 'not_placed' }),
            'dial.last_error': failure.message.slice(0, 500),
            updated_at: new Date(),
          },
        },
      ),
    );
    throw failure;
  }
  await recordPlaced(services, call, placed);
  return 'placed';
}

async function recordPlaced(services: Services, call: CallDoc, placed: ProviderCall): Promise<void> {
  const now = new Date();
  await withCallLock(services, call.firm, call._id, () =>
    callsCollection(services.mongo.db).updateOne(
      { _id: call._id },
      {
        $set: {
          provider_call_id: placed.providerCallId,
          'dial.state': 'placed',
          'dial.placed_at': now,
          updated_at: now,
        },
      },
    ),
  );
}

/** The dial failed for good (rejected, or out of attempts): the call ends as `error`. */
export async function markDialFailed(
  services: Services,
  firm: string,
  callId: string,
  reason: string,
): Promise<void> {
  const now = new Date();
  await withCallLock(services, firm, callId, () =>
    callsCollection(services.mongo.db).updateOne(
      { _id: callId, provider_call_id: null, status_rank: { $lt: FINISHED_RANK } },
      {
        $set: {
          status: 'error',
          status_rank: FINISHED_RANK,
          finished: true,
          end_timestamp: now.getTime(),
          disconnection_reason: 'dial_failed',
          error_message: reason.slice(0, 500),
          updated_at: now,
        },
      },
    ),
  );
}
