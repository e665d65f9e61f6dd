// Retell webhook bodies as Retell sends them, typed with retell-sdk's own types (PhoneCallResponse
// from node_modules/retell-sdk/src/resources/call.ts, ChatResponse from .../chat.ts) and never
// cast: a field Retell does not have, or a value it never sends (a disconnection_reason, a
// call_status), is a compile error, so these fixtures cannot drift from the real sender. The
// call object is full-size: word-level transcript_object, transcript_with_tool_calls, latency,
// call_cost, llm_token_usage and the scrubbed_* copies, as a call_analyzed carries them.
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import type { ChatResponse } from 'retell-sdk/resources/chat';
import type { AgentResponse } from 'retell-sdk/resources/agent';
import type { ChatAgentResponse } from 'retell-sdk/resources/chat-agent';
import type { LlmResponse } from 'retell-sdk/resources/llm';

type Utterance = PhoneCallResponse.TranscriptObject;
type ToolCallUtterance = NonNullable<PhoneCallResponse['transcript_with_tool_calls']>[number];
type Line = [role: 'agent' | 'user', text: string];

/** Every event a voice agent's webhook is sent (retell-sdk's AgentResponse.webhook_events). */
export type RetellVoiceEvent = NonNullable<AgentResponse['webhook_events']>[number];
/** The transfer events, which carry transfer_destination and transfer_option beside the call. */
export type RetellTransferEvent = Extract<
  RetellVoiceEvent,
  'transfer_started' | 'transfer_bridged' | 'transfer_cancelled'
>;
export type RetellCallEvent = Exclude<RetellVoiceEvent, RetellTransferEvent>;
/** Every event a chat agent's webhook is sent (retell-sdk's ChatAgentResponse.webhook_events). */
export type RetellChatEvent = NonNullable<ChatAgentResponse['webhook_events']>[number];

/** Each of them, listed: `satisfies` makes a missing or unknown one a compile error. */
export const VOICE_EVENTS = {
  call_started: true,
  call_ended: true,
  call_analyzed: true,
  transcript_updated: true,
  transfer_started: true,
  transfer_bridged: true,
  transfer_cancelled: true,
  transfer_ended: true,
} as const satisfies Record<RetellVoiceEvent, true>;
export const CHAT_EVENTS = {
  chat_started: true,
  chat_ended: true,
  chat_analyzed: true,
  transcript_updated: true,
} as const satisfies Record<RetellChatEvent, true>;

/** One webhook body: Retell's envelope around the call object. */
export interface RetellCallWebhook {
  event: RetellCallEvent;
  call: PhoneCallResponse;
}

const START = 1_714_000_000_000;
const SECONDS_PER_WORD = 0.32;

const randomId = (prefix: string) => `${prefix}_${Math.random().toString(36).slice(2, 14)}`;

/** Word-level timings as Retell's ASR gives them, laid end to end from `at` seconds. */
function utterances(lines: Line[]): Utterance[] {
  let at = 0.4;
  return lines.map(([role, content]) => {
    const words = content.split(/\s+/).map((word) => {
      const start = at;
      at += SECONDS_PER_WORD;
      return { word, start: Number(start.toFixed(3)), end: Number((at - 0.04).toFixed(3)) };
    });
    at += 0.6;
    return { role, content, words };
  });
}

const transcriptOf = (lines: Line[]) =>
  lines.map(([role, text]) => `${role === 'agent' ? 'Agent' : 'User'}: ${text}`).join('\n') + '\n';

const latency = (p50: number): PhoneCallResponse.Latency => {
  const stats = (base: number) => ({
    p50: base,
    p90: base * 1.4,
    p95: base * 1.6,
    p99: base * 2,
    max: base * 2.3,
    min: base * 0.6,
    num: 24,
    values: Array.from({ length: 24 }, (_, i) => base * (0.6 + (i % 7) * 0.15)),
  });
  return {
    e2e: stats(p50),
    asr: stats(p50 * 0.2),
    llm: stats(p50 * 0.45),
    tts: stats(p50 * 0.25),
    llm_websocket_network_rtt: stats(40),
    knowledge_base: stats(0),
  };
};

const callCost = (seconds: number): PhoneCallResponse.CallCost => ({
  product_costs: [
    { product: 'elevenlabs_tts', unit_price: 0.07, cost: (seconds / 60) * 7 },
    { product: 'gpt_4o_mini', unit_price: 0.006, cost: (seconds / 60) * 0.6 },
    { product: 'retell_platform', unit_price: 0.05, cost: (seconds / 60) * 5 },
  ],
  total_duration_seconds: seconds,
  total_duration_unit_price: 0.126,
  combined_cost: (seconds / 60) * 12.6,
});

export interface CallOptions {
  callId?: string;
  /** Our call id, for an outbound call we placed (Retell echoes the metadata). */
  ourCallId?: string;
  direction?: PhoneCallResponse['direction'];
  fromNumber?: string;
  toNumber?: string;
  lines?: Line[];
}

/** A phone call object with every field Retell fills in by call_analyzed. */
export function retellPhoneCall(
  options: CallOptions & Partial<PhoneCallResponse> & Pick<PhoneCallResponse, 'call_status'>,
): PhoneCallResponse {
  const { callId, ourCallId, direction, fromNumber, toNumber, lines = [], ...fields } = options;
  const transcript = utterances(lines);
  const seconds = Math.round(transcript.at(-1)?.words.at(-1)?.end ?? 0) + 2;
  const withTools: ToolCallUtterance[] = [
    ...transcript,
    {
      role: 'tool_call_invocation',
      tool_call_id: 'tc_1',
      name: 'end_call',
      arguments: '{"execution_message":"Goodbye"}',
    },
    { role: 'tool_call_result', tool_call_id: 'tc_1', content: 'ok', successful: true },
  ];
  const call: PhoneCallResponse = {
    call_type: 'phone_call',
    call_id: callId ?? randomId('call'),
    agent_id: 'agent_4f2c9b1d7e8a',
    agent_version: 7,
    agent_name: 'Intake line',
    direction: direction ?? 'outbound',
    from_number: fromNumber ?? '+14155550100',
    to_number: toNumber ?? '+14155550142',
    start_timestamp: START,
    end_timestamp: START + seconds * 1000,
    duration_ms: seconds * 1000,
    transcript: transcriptOf(lines),
    transcript_object: transcript,
    transcript_with_tool_calls: withTools,
    scrubbed_transcript_with_tool_calls: withTools,
    recording_url: 'https://dxc03zgurdly9.cloudfront.net/c1/recording.wav',
    recording_multi_channel_url: 'https://dxc03zgurdly9.cloudfront.net/c1/recording_multichannel.wav',
    scrubbed_recording_url: 'https://dxc03zgurdly9.cloudfront.net/c1/scrubbed_recording.wav',
    scrubbed_recording_multi_channel_url:
      'https://dxc03zgurdly9.cloudfront.net/c1/scrubbed_recording_multichannel.wav',
    public_log_url: 'https://dxc03zgurdly9.cloudfront.net/c1/public.log',
    knowledge_base_retrieved_contents_url: 'https://dxc03zgurdly9.cloudfront.net/c1/kb.txt',
    metadata: ourCallId === undefined ? { source: 'website' } : { call_id: ourCallId },
    retell_llm_dynamic_variables: {},
    collected_dynamic_variables: {},
    custom_sip_headers: {},
    data_storage_setting: 'everything',
    opt_in_signed_url: false,
    telephony_identifier: { twilio_call_sid: 'CA0f3c1e2d4b5a69788796a5b4c3d2e1f0' },
    latency: latency(820),
    llm_token_usage: { average: 1830, num_requests: 12, values: Array.from({ length: 12 }, () => 1830) },
    call_cost: callCost(seconds),
    ...fields,
  };
  return call;
}

/** A caller in a conversation: what they say and what Retell's analysis extracts. */
export interface RetellCaller {
  first_name: string | null;
  last_name: string | null;
  phone: string;
  email: string | null;
  case_type: string;
  /** Only when the agent's analysis asks for it. */
  urgency?: string;
  summary: string;
}

/** A caller for tests that need one conversation and do not care who it is. */
export const SAMPLE_CALLER: RetellCaller = {
  first_name: 'Pat',
  last_name: 'Rivera',
  phone: '+14155550142',
  email: 'pat@client.test',
  case_type: 'Personal Injury',
  summary: 'Rear-ended on the highway.',
};

export function conversationLines(caller: RetellCaller): Line[] {
  const name = [caller.first_name, caller.last_name].filter((p) => p !== null).join(' ');
  return [
    ['agent', 'Thank you for calling Smith & Partners. May I have your full name?'],
    ['user', name === '' ? "I'd rather not say." : `${name}.`],
    ['agent', 'What number can we reach you on?'],
    ['user', caller.phone],
    ['agent', 'And your email address?'],
    ['user', caller.email ?? "I don't use email."],
    ['agent', 'Briefly, what happened?'],
    ['user', 'I was rear-ended at a red light and my neck still hurts.'],
  ];
}

/** A call in which the caller talked with the agent, as call_analyzed reports it. */
export function conversationCall(caller: RetellCaller, options: CallOptions = {}): PhoneCallResponse {
  return retellPhoneCall({
    ...options,
    call_status: 'ended',
    disconnection_reason: 'user_hangup',
    lines: options.lines ?? conversationLines(caller),
    call_analysis: conversationAnalysis(caller),
  });
}

/** Retell's post-call analysis of a conversation: what the agent's analysis fields extracted. */
export function conversationAnalysis(caller: RetellCaller): PhoneCallResponse.CallAnalysis {
  return {
    call_summary: caller.summary,
    in_voicemail: false,
    user_sentiment: 'Negative',
    call_successful: true,
    custom_analysis_data: {
      first_name: caller.first_name,
      last_name: caller.last_name,
      phone_number: caller.phone,
      email: caller.email,
      case_type: caller.case_type,
      ...(caller.urgency === undefined ? {} : { urgency: caller.urgency }),
      summary: caller.summary,
    },
  };
}

const VOICEMAIL_GREETING =
  "Hi, you've reached Dana. I can't take your call right now, please leave a message after the tone.";

/** An outbound call answered by a voicemail box (Retell's voicemail detection). */
export function voicemailCall(options: CallOptions = {}): PhoneCallResponse {
  return retellPhoneCall({
    ...options,
    call_status: 'ended',
    disconnection_reason: 'voicemail_reached',
    lines: [
      ['agent', 'Hello, this is the intake line of Smith & Partners returning your call.'],
      ['user', VOICEMAIL_GREETING],
    ],
    call_analysis: {
      call_summary: 'The call reached a voicemail greeting.',
      in_voicemail: true,
      user_sentiment: 'Neutral',
      call_successful: false,
      custom_analysis_data: {},
    },
  });
}

const PHONE_MENU =
  'Thank you for calling Bayside Dental. For appointments, press 1. For billing, press 2. To repeat this menu, press 9.';

/**
 * An outbound call answered by a phone menu, which the agent hung up on (Retell's IVR
 * detection: disconnection_reason "ivr_reached", call_status "ended"). The transcript and the
 * analysis are what Retell makes of a menu: a "user" who recites options, a summary of it.
 */
export function ivrCall(options: CallOptions = {}): PhoneCallResponse {
  return retellPhoneCall({
    ...options,
    call_status: 'ended',
    disconnection_reason: 'ivr_reached',
    lines: [
      ['agent', 'Hello, this is the intake line of Smith & Partners returning your call.'],
      ['user', PHONE_MENU],
    ],
    call_analysis: {
      call_summary: 'The call reached an automated phone menu offering appointments and billing.',
      in_voicemail: false,
      user_sentiment: 'Neutral',
      call_successful: false,
      custom_analysis_data: {
        first_name: null,
        last_name: null,
        phone_number: options.toNumber ?? '+14155550142',
        email: null,
        case_type: 'Other',
        summary: 'A phone menu: press 1 for appointments, 2 for billing.',
      },
    },
  });
}

/**
 * An outbound call that was never answered, with the call_status Retell's own sample shows beside
 * a dial failure ("ended"), or another; no transcript, no analysis to speak of.
 */
export function dialFailureCall(
  reason: NonNullable<PhoneCallResponse['disconnection_reason']>,
  options: CallOptions & { callStatus?: PhoneCallResponse['call_status'] } = {},
): PhoneCallResponse {
  const call = retellPhoneCall({
    ...options,
    call_status: options.callStatus ?? 'ended',
    disconnection_reason: reason,
    call_analysis: {
      call_summary: 'The call did not connect.',
      in_voicemail: false,
      user_sentiment: 'Unknown',
      call_successful: false,
      custom_analysis_data: {},
    },
  });
  return { ...call, duration_ms: 0, end_timestamp: START, transcript: '' };
}

/** A long call's call_analyzed, full size: `minutes` of word-level transcript (several MB at 90+). */
export function longConversationCall(caller: RetellCaller, minutes: number): PhoneCallResponse {
  const wordsPerMinute = 150;
  const sentence = 'and then the other driver said he had not seen the light change at all that morning';
  const lines: Line[] = conversationLines(caller);
  const perLine = sentence.split(' ').length;
  for (let i = 0; i < Math.ceil((minutes * wordsPerMinute) / perLine); i++) {
    lines.push([i % 2 === 0 ? 'user' : 'agent', sentence]);
  }
  return conversationCall(caller, { lines });
}

export const callWebhook = (event: RetellCallEvent, call: PhoneCallResponse): RetellCallWebhook => ({
  event,
  call,
});

/**
 * A transfer event: the call plus where it went and how (Retell's webhook overview: "full call
 * data plus transfer_destination and transfer_option").
 */
export const transferWebhook = (event: RetellTransferEvent, call: PhoneCallResponse) => ({
  event,
  call,
  transfer_destination: {
    type: 'predefined',
    number: '+14155550199',
  } satisfies LlmResponse.TransferCallTool.TransferDestinationPredefined,
  transfer_option: {
    type: 'cold_transfer',
  } satisfies LlmResponse.TransferCallTool.TransferOptionColdTransfer,
});

/** Any event of a voice agent, in the shape Retell sends it. */
export const voiceWebhook = (event: RetellVoiceEvent, call: PhoneCallResponse) =>
  event === 'transfer_started' || event === 'transfer_bridged' || event === 'transfer_cancelled'
    ? transferWebhook(event, call)
    : callWebhook(event, call);

/** A Retell chat event: the chat object under `chat`, no `call` (retell-sdk's ChatResponse). */
export function chatWebhook(event: RetellChatEvent): { event: RetellChatEvent; chat: ChatResponse } {
  const chat: ChatResponse = {
    chat_id: randomId('chat'),
    agent_id: 'agent_4f2c9b1d7e8a',
    chat_status: event === 'chat_started' || event === 'transcript_updated' ? 'ongoing' : 'ended',
    chat_type: 'api_chat',
    start_timestamp: START,
    transcript: 'Agent: Hi, how can we help?\nUser: I was in a car accident.\n',
    retell_llm_dynamic_variables: {},
    collected_dynamic_variables: {},
    metadata: {},
  };
  if (event === 'chat_ended' || event === 'chat_analyzed') chat.end_timestamp = START + 60_000;
  if (event === 'chat_analyzed') {
    chat.chat_analysis = { chat_summary: 'A car accident enquiry.', chat_successful: true };
  }
  return { event, chat };
}

/** A custom function's request with the default payload: `{name, call, args}` (Retell's custom-function doc). */
export interface CustomFunctionRequest {
  name: string;
  call: PhoneCallResponse;
  args: Record<string, unknown>;
}

/**
 * The call object a custom function receives mid-call: ongoing, the transcript so far, the
 * dynamic variables the call was started with.
 */
export function ongoingCall(options: CallOptions & { dynamicVariables?: Record<string, string> } = {}) {
  const { dynamicVariables, ...rest } = options;
  const call = retellPhoneCall({
    lines: [
      ['agent', 'Thank you for calling Smith & Partners. How can we help?'],
      ['user', 'I would like a consultation about my accident.'],
    ],
    ...rest,
    call_status: 'ongoing',
    retell_llm_dynamic_variables: dynamicVariables ?? {},
  });
  // Nothing of the end of a call is known yet.
  const {
    end_timestamp: _end,
    duration_ms: _duration,
    recording_url: _recording,
    recording_multi_channel_url: _multi,
    scrubbed_recording_url: _scrubbed,
    scrubbed_recording_multi_channel_url: _scrubbedMulti,
    public_log_url: _log,
    knowledge_base_retrieved_contents_url: _kb,
    latency: _latency,
    llm_token_usage: _tokens,
    call_cost: _cost,
    ...ongoing
  } = call;
  return ongoing;
}

/** A custom function's request in the default payload mode. */
export const customFunctionRequest = (
  name: string,
  call: PhoneCallResponse,
  args: Record<string, unknown>,
): CustomFunctionRequest => ({ name, call, args });
