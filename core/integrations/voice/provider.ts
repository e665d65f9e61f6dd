// The voice platform behind calls and voices: Retell in production, the built-in simulator
// by default. Chosen by VOICE_PROVIDER (core/wiring/services.ts).

type VoiceGender = 'male' | 'female' | 'neutral';

export interface VoiceEntry {
  voice_id: string;
  name: string;
  /** Locale tag, e.g. en-US. */
  language: string;
  gender: VoiceGender;
  provider?: string;
  accent?: string;
  preview_audio_url?: string;
}

export interface PlaceCallRequest {
  /** Our call id; it travels in the provider call's metadata so a retry can find the call. */
  callId: string;
  firm: string;
  /** Our agent id (also sent in the metadata). */
  agentId: string;
  /** The agent id at the provider (Retell's override_agent_id), when the agent has one. */
  providerAgentId?: string;
  /** The caller number (the firm's settings.from_number); Retell requires it. */
  fromNumber?: string;
  toNumber: string;
  dynamicVariables: Record<string, string>;
  /**
   * The agent as the call plays it, for a provider that runs our script (the simulator speaks
   * these intake questions); Retell keeps its own agent (providerAgentId).
   */
  agent?: CallAgentProfile;
  /** Where the provider reports the call's events, for one we configure per call (the simulator). */
  webhook?: WebhookTarget;
}

export interface CallAgentProfile {
  agent_name: string;
  begin_message: string;
  intake_questions: Array<{ key: string; question: string }>;
}

export interface WebhookTarget {
  /** The firm's public call webhook, e.g. https://intake.example.com/api/v2/acme/webhook. */
  url: string;
  /** The key the events are signed with, as Retell signs them (x-retell-signature). */
  secret: string;
}

/** Retell's `call` object: its id and whatever else the provider says of the call. */
export type ProviderCallObject = Record<string, unknown> & { call_id: string };

export interface ProviderCall {
  providerCallId: string;
  /** The provider's call status: registered, ongoing, ended, not_connected or error. */
  status: string;
}

/**
 * rate_limited: the provider said 429 (slow the whole queue, retry later);
 * retryable: 5xx, timeout or network failure (retry with backoff);
 * rejected: the provider refused the request for good (4xx); retrying cannot help.
 */
type ProviderErrorKind = 'rate_limited' | 'retryable' | 'rejected';

export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  /**
   * False when the provider answered and so certainly created no call (429, 4xx); true when
   * the outcome is unknown (timeout, dropped connection, 5xx), so a retry must ask first.
   */
  readonly callMayExist: boolean;

  constructor(
    kind: ProviderErrorKind,
    message: string,
    options: { status?: number; retryAfterMs?: number; callMayExist?: boolean; cause?: unknown } = {},
  ) {
    super(message);
    this.name = 'ProviderError';
    this.kind = kind;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.callMayExist = options.callMayExist ?? kind === 'retryable';
    if (options.cause !== undefined) this.cause = options.cause;
  }
}

export interface VoiceProvider {
  readonly name: 'simulator' | 'retell';
  /** Plays our agent's script and reports to the webhook we give per call (PlaceCallRequest.agent/webhook). */
  readonly playsOurScript: boolean;
  listVoices(): Promise<VoiceEntry[]>;
  /** Creates the call at the provider. Throws ProviderError on failure. */
  placeCall(request: PlaceCallRequest): Promise<ProviderCall>;
  /** The provider call carrying our call id in its metadata, if one was created. */
  findCall(callId: string, firm: string): Promise<ProviderCall | null>;
  /**
   * The provider's call as its own record has it now (Retell's `call` object, as get-call answers
   * it and its webhooks carry it), by the provider's call id; null when it has no such call. The
   * lost-call sweep asks it about a call whose events stopped (core/domain/calls/lost-calls.ts).
   */
  getCall(providerCallId: string): Promise<ProviderCallObject | null>;
}

/** Maps the many ways providers spell gender to ours. */
export function normaliseGender(value: string | undefined | null): VoiceGender {
  const v = (value ?? '').trim().toLowerCase();
  if (['male', 'm', 'man'].includes(v)) return 'male';
  if (['female', 'f', 'woman'].includes(v)) return 'female';
  return 'neutral';
}
