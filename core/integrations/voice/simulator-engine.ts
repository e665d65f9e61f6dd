import type { Db, UpdateFilter } from 'mongodb';
import type { Config } from '../../platform/config.js';
import { simulateConversation } from './simulator-script.js';
import { simulateVoicemail } from './simulator-voicemail.js';
import { asksForAppointment, simulateBooking } from './simulator-tools.js';
import {
  retellCallPayload,
  simulatorCalls,
  simulatorWebhookSecret,
  type SimulatedCall,
  type SimulatedCallStatus,
  type SimulatorCallDoc,
  type SimulatorEvent,
} from './simulator.js';
import { simulatorPost } from './simulator-http.js';

// Plays a simulated call out, as the provider would: it is answered (or not), talks, hangs up,
// and each change is reported to the firm's public call webhook over HTTP, signed as Retell
// signs, with the key the call was placed with (the firm's voice_webhook_secret, or a key derived
// for the simulator: core/domain/calls/webhook-secret.ts). A failed delivery
// throws, so the simulator job retries; events already delivered are not sent again. A step's
// events go out before it is written, and the step and its deliveries are one write: a call is
// three writes (placed, answered, hung up), not five. Each step starts from the call as the step
// before left it, carried by its job (the place's insert, then the answer's write), so a call
// that plays through is never read back; a step whose write finds the call moved on since reads it.

interface SimulatorDeps {
  db: Db;
  config: Config;
}

const EVENTS_FOR: Record<SimulatedCallStatus, SimulatorEvent[]> = {
  registered: [],
  ongoing: ['call_started'],
  ended: ['call_ended', 'call_analyzed'],
  not_connected: ['call_ended'],
};

/** Where a run of the call got to: `waitUntil` says when to come back (the hang-up), with the call as it left it. */
export type SimulatedStep =
  | { status: SimulatedCallStatus | 'gone'; waitUntil?: undefined }
  | { status: 'ongoing'; waitUntil: number; call: SimulatedCall };

/**
 * Runs the call as far as it can go now. `known`: the call as the step before left it (its job
 * carries it), so it is not read back; a step that finds the call moved on since (its write
 * matches nothing) reads it then.
 */
export async function advanceSimulatedCall(
  deps: SimulatorDeps,
  providerCallId: string,
  known?: SimulatedCall,
): Promise<SimulatedStep> {
  let call: SimulatedCall | null =
    known?._id === providerCallId ? known : await simulatorCalls(deps.db).findOne({ _id: providerCallId });
  for (;;) {
    if (call === null) return { status: 'gone' };
    call = await deliverDue(deps, call);
    const now = Date.now();
    if (call.call_status === 'registered') {
      if (call.outcome === 'no_answer') {
        call = await step(deps, call, {
          call_status: 'not_connected',
          end_timestamp: now,
          duration_ms: 0,
          disconnection_reason: 'dial_no_answer',
        });
      } else {
        call = await step(deps, call, {
          call_status: 'ongoing',
          start_timestamp: now,
          hangup_at: now + Math.floor(deps.config.simCallMs / 2),
        });
      }
      continue;
    }
    if (call.call_status === 'ongoing') {
      const hangupAt = call.hangup_at ?? now;
      if (now < hangupAt) return { status: 'ongoing', waitUntil: hangupAt, call };
      const start = call.start_timestamp ?? now;
      const voicemail = call.outcome === 'voicemail';
      let booking = call.booking ?? null;
      if (!voicemail && asksForAppointment(call.to_number) && call.booking === undefined) {
        // The caller asks for a consultation before hanging up: the agent's tools, as Retell calls them.
        const data = simulateConversation(call.agent, call.retell_llm_dynamic_variables, call.to_number)
          .call_analysis.custom_analysis_data;
        booking = await simulateBooking(deps.db, call, {
          name: data.name ?? 'Jordan Lee',
          email: data.email ?? 'caller@example.com',
        });
        await simulatorCalls(deps.db).updateOne({ _id: call._id }, { $set: { booking } });
        call = { ...call, booking };
      }
      const conversation = voicemail
        ? simulateVoicemail(call.agent.begin_message)
        : simulateConversation(call.agent, call.retell_llm_dynamic_variables, call.to_number, booking);
      call = await step(deps, call, {
        call_status: 'ended',
        end_timestamp: now,
        duration_ms: now - start,
        disconnection_reason: voicemail ? 'voicemail_reached' : 'user_hangup',
        transcript: conversation.transcript,
        call_analysis: conversation.call_analysis,
      });
      continue;
    }
    return { status: call.call_status };
  }
}

/** Sends the events `call`'s status calls for that were not sent yet, in order, until one fails. */
async function sendDue(
  deps: SimulatorDeps,
  call: SimulatedCall,
): Promise<{ sent: SimulatorEvent[]; failure?: unknown }> {
  const sent: SimulatorEvent[] = [];
  try {
    for (const event of EVENTS_FOR[call.call_status]) {
      if (call.delivered.includes(event)) continue;
      await deliverWebhook(deps, call, event);
      sent.push(event);
    }
  } catch (failure) {
    return { sent, failure };
  }
  return { sent };
}

/**
 * Sends what a call whose status is already written still owes (a step whose later event failed),
 * and records them sent in one write; when one fails, those sent before it are still recorded, so
 * a retry sends only what is left.
 */
async function deliverDue(deps: SimulatorDeps, call: SimulatedCall): Promise<SimulatedCall> {
  const { sent, failure } = await sendDue(deps, call);
  if (sent.length > 0) {
    const record = simulatorCalls(deps.db).updateOne(
      { _id: call._id },
      { $addToSet: { delivered: { $each: sent } } },
    );
    await (failure === undefined ? record : record.catch(() => undefined));
  }
  if (failure !== undefined) throw failure;
  return { ...call, delivered: [...call.delivered, ...sent] };
}

/**
 * One step of the call (answered, not answered, hung up): its events are sent first, then the
 * step and what was delivered are written together, in one write (call_ended and call_analyzed go
 * together). When an event fails, the step is written with those sent before it, so a retry sends
 * only what is left; when the first fails, nothing is written and the retry takes the step again
 * (a provider's webhook can arrive twice; the firm's receiver takes an event once).
 */
async function step(
  deps: SimulatorDeps,
  call: SimulatedCall,
  changes: Partial<SimulatedCall>,
): Promise<SimulatedCall | null> {
  const { sent, failure } = await sendDue(deps, { ...call, ...changes });
  if (failure !== undefined && sent.length === 0) throw failure;
  const written = await transition(deps.db, call, { ...changes, delivered: [...call.delivered, ...sent] });
  if (failure !== undefined) throw failure;
  return written;
}

/**
 * Moves the provider-side call on, once: concurrent runs cannot both take a step. Returns the call
 * as it now is: as written when this run moved it, else read again.
 */
async function transition(
  db: Db,
  call: SimulatedCall,
  changes: Partial<SimulatedCall>,
): Promise<SimulatedCall | null> {
  const result = await simulatorCalls(db).updateOne({ _id: call._id, call_status: call.call_status }, {
    $set: changes,
  } as UpdateFilter<SimulatorCallDoc>);
  if (result.modifiedCount === 1) return { ...call, ...changes };
  return simulatorCalls(db).findOne({ _id: call._id });
}

async function deliverWebhook(
  deps: SimulatorDeps,
  call: SimulatedCall,
  event: SimulatorEvent,
): Promise<void> {
  const body = JSON.stringify({ event, call: retellCallPayload(call, event) });
  const secret = await simulatorWebhookSecret(deps.db, call);
  // With tracing on, the webhook's handling joins this call's trace (traceparent).
  const res = await simulatorPost(call.webhook.url, body, secret, 10_000);
  if (res.status < 200 || res.status > 299)
    throw new Error(`The call webhook answered ${res.status} to ${event} for ${call._id}.`);
}
