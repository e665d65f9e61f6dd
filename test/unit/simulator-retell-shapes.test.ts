// The simulator stands in for Retell (VOICE_PROVIDER=simulator): each webhook body it sends must be
// one Retell could send, judged by the document derived from retell-sdk's types.
import { describe, expect, it } from 'vitest';
import { retellCallPayload } from '../../core/integrations/voice/simulator.js';
import { retellCallObject, type SimulatorCallDoc } from '../../core/integrations/voice/simulator.js';
import { loadSpec } from '../fakes/spec/openapi-spec.js';

const spec = loadSpec('retell');
const started = Date.parse('2026-12-01T17:00:00Z');

function call(
  outcome: SimulatorCallDoc['outcome'],
  changes: Partial<SimulatorCallDoc> = {},
): SimulatorCallDoc {
  return {
    _id: 'call_sim_0123456789abcdef',
    agent_id: 'agent_sim',
    from_number: '+14155550100',
    to_number: '+14155550123',
    direction: 'outbound',
    call_type: 'phone_call',
    call_status: 'ended',
    outcome,
    metadata: { call_id: 'c_1', firm: 'acme-law', agent_id: 'agent_sim' },
    agent: {} as SimulatorCallDoc['agent'],
    webhook: { url: 'http://127.0.0.1:1/webhook', secret: 's' } as SimulatorCallDoc['webhook'],
    retell_llm_dynamic_variables: { first_name: 'Maria' },
    start_timestamp: started,
    end_timestamp: started + 95_000,
    hangup_at: null,
    duration_ms: 95_000,
    disconnection_reason: 'user_hangup',
    transcript: 'Agent: Hello.\nUser: Hi, I was rear-ended.',
    call_analysis: {
      call_summary: 'A rear-end collision.',
      in_voicemail: false,
      user_sentiment: 'Neutral',
      call_successful: true,
      custom_analysis_data: {},
    },
    delivered: [],
    created_at: new Date(started),
    ...changes,
  };
}

describe("the simulator's webhooks, as Retell sends them", () => {
  it('call_started, call_ended and call_analyzed of an answered call', () => {
    const ongoing = call('answered', {
      call_status: 'ongoing',
      end_timestamp: null,
      duration_ms: null,
      disconnection_reason: null,
      transcript: null,
      call_analysis: null,
    });
    expect(
      spec.checkSchema('CallWebhook', {
        event: 'call_started',
        call: retellCallPayload(ongoing, 'call_started'),
      }),
    ).toEqual([]);
    for (const event of ['call_ended', 'call_analyzed'] as const) {
      expect(
        spec.checkSchema('CallWebhook', { event, call: retellCallPayload(call('answered'), event) }),
        event,
      ).toEqual([]);
    }
  });

  it('a call not answered, and one that reached voicemail', () => {
    const missed = call('no_answer', {
      call_status: 'not_connected',
      start_timestamp: null,
      duration_ms: 0,
      disconnection_reason: 'dial_no_answer',
      transcript: null,
      call_analysis: null,
    });
    expect(
      spec.checkSchema('CallWebhook', { event: 'call_ended', call: retellCallPayload(missed, 'call_ended') }),
    ).toEqual([]);
    const voicemail = call('voicemail', {
      disconnection_reason: 'voicemail_reached',
      call_analysis: { in_voicemail: true, call_summary: 'Voicemail.' },
    });
    expect(
      spec.checkSchema('CallWebhook', {
        event: 'call_analyzed',
        call: retellCallPayload(voicemail, 'call_analyzed'),
      }),
    ).toEqual([]);
  });

  it("a custom function call the simulated caller's agent makes", () => {
    const body = {
      name: 'check_availability',
      call: retellCallObject(call('answered'), 'ongoing'),
      args: { date: '2026-12-01' },
    };
    expect(spec.checkSchema('CustomFunctionRequest', body)).toEqual([]);
  });
});
