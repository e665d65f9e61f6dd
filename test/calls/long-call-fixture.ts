import type { PhoneCallResponse } from 'retell-sdk/resources/call';

// A long call's call_analyzed as Retell sends it, typed with retell-sdk's own PhoneCallResponse
// (a field Retell does not have fails the typecheck): a two-hour conversation with the word-level
// transcript_object (role, content, words: [{word, start, end}]), transcript_with_tool_calls (the
// same utterances with the tool calls between them) and its scrubbed copy, latency and call_cost.
// At 120 minutes it is about 2.9 MB of JSON, the size real Retell calls reach (2.3–3.4 MB at 90–120 min).

const AGENT_LINES = [
  'Thank you, could you tell me a little more about what happened after the accident that day?',
  'I understand. Did you see a doctor or go to an emergency room afterwards, and when was that?',
  'And has the other driver’s insurance company contacted you or asked for a recorded statement?',
  'Okay, I am noting that down. Were there any witnesses at the scene who gave their names?',
];
const USER_LINES = [
  'Yes so I was stopped at the light on Mission and the truck behind me just did not stop at all',
  'I went to urgent care the next morning because my neck was stiff and my back started hurting',
  'They called me twice already and the adjuster wanted me to sign a medical release form right away',
  'There was a woman on the corner who saw it and she gave me her number before the police came',
];

export interface LongCall {
  event: 'call_analyzed';
  call: PhoneCallResponse;
}

/**
 * A call_analyzed of a `minutes`-long conversation, speech at about 240 words a minute (both
 * sides): 120 minutes make a 140,000-character transcript, 240 minutes one past the 200,000
 * characters the service keeps.
 */
export function longCallAnalyzed(options: {
  providerCallId: string;
  ourCallId?: string;
  minutes?: number;
}): LongCall {
  const minutes = options.minutes ?? 120;
  const start = Date.now() - minutes * 60_000;
  const utterances: PhoneCallResponse.TranscriptObject[] = [];
  let clock = 0.4;
  for (let turn = 0; clock < minutes * 60; turn++) {
    const role = turn % 2 === 0 ? ('agent' as const) : ('user' as const);
    const line = (role === 'agent' ? AGENT_LINES : USER_LINES)[Math.floor(turn / 2) % 4]!;
    const words = line.split(' ').map((word) => {
      const w = { word, start: round(clock), end: round(clock + 0.21) };
      clock += 0.25;
      return w;
    });
    clock += 0.6;
    utterances.push({ role, content: line, words });
  }
  const transcript =
    utterances.map((u) => `${u.role === 'agent' ? 'Agent' : 'User'}: ${u.content}`).join('\n') + '\n';
  const withTools: NonNullable<PhoneCallResponse['transcript_with_tool_calls']> = [];
  utterances.forEach((u, i) => {
    withTools.push(u);
    if (i === 41) {
      withTools.push({
        role: 'tool_call_invocation',
        tool_call_id: 'tool_call_7c1e',
        name: 'check_availability',
        arguments: '{"date":"2026-12-01"}',
      });
      withTools.push({
        role: 'tool_call_result',
        tool_call_id: 'tool_call_7c1e',
        content: '{"slots":["2026-12-01T10:00:00-08:00","2026-12-01T14:30:00-08:00"]}',
      });
    }
  });
  const durationMs = minutes * 60_000;
  return {
    event: 'call_analyzed',
    call: {
      call_type: 'phone_call',
      call_id: options.providerCallId,
      agent_id: 'agent_4f2c9b1d7e',
      agent_version: 3,
      agent_name: 'Intake line',
      call_status: 'ended',
      direction: 'outbound',
      from_number: '+14155550100',
      to_number: '+14155550142',
      start_timestamp: start,
      end_timestamp: start + durationMs,
      duration_ms: durationMs,
      disconnection_reason: 'user_hangup',
      transcript,
      transcript_object: utterances,
      transcript_with_tool_calls: withTools,
      // The scrubbed copy: the same turns, their words not repeated here.
      scrubbed_transcript_with_tool_calls: withTools.map((u) => ('words' in u ? { ...u, words: [] } : u)),
      recording_url: 'https://dxc03zgurdly9.cloudfront.net/recording.wav',
      recording_multi_channel_url: 'https://dxc03zgurdly9.cloudfront.net/recording_multichannel.wav',
      public_log_url: 'https://dxc03zgurdly9.cloudfront.net/public.log',
      metadata: options.ourCallId === undefined ? { source: 'campaign' } : { call_id: options.ourCallId },
      retell_llm_dynamic_variables: { customer_name: 'Dana' },
      collected_dynamic_variables: { preferred_time: 'mornings' },
      latency: {
        e2e: { p50: 820, p90: 1240, p95: 1510, p99: 2050, max: 3100, min: 480, num: utterances.length },
        llm: { p50: 410, p90: 700, p95: 820, p99: 1100, max: 1900, min: 210, num: utterances.length },
        tts: { p50: 180, p90: 260, p95: 300, p99: 410, max: 650, min: 90, num: utterances.length },
      },
      call_cost: {
        product_costs: [
          { product: 'elevenlabs_tts', unit_price: 0.07, cost: 0.07 * minutes * 100 },
          { product: 'gpt_4o_mini', unit_price: 0.006, cost: 0.006 * minutes * 100 },
        ],
        total_duration_seconds: minutes * 60,
        total_duration_unit_price: 0.07,
        combined_cost: 0.076 * minutes * 100,
      },
      call_analysis: {
        call_summary:
          'Dana Whitfield was rear-ended on Mission Street; neck and back pain; insurer pressing.',
        in_voicemail: false,
        user_sentiment: 'Neutral',
        call_successful: true,
        custom_analysis_data: {
          first_name: 'Dana',
          last_name: 'Whitfield',
          phone_number: '+14155550142',
          case_type: 'Personal Injury',
          urgency: 'high',
        },
      },
    },
  };
}

const round = (seconds: number): number => Math.round(seconds * 1000) / 1000;
