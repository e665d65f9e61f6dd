// The voice platform behind calls and voices: Retell in production, the built-in simulator
// by default. Chosen by VOICE_PROVIDER (core/integrations/voice/index.ts).

export type VoiceGender = 'male' | 'female' | 'neutral';

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
  agentId: string;
  /** The agent id at the provider (Retell's agent_id); ours when the provider has none. */
  providerAgentId: string;
  fromNumber: string | undefined;
  toNumber: string;
  dynamicVariables: Record<string, string>;
}

export interface ProviderCall {
  providerCallId: string;
  /** The provider's call status, e.g. registered, ongoing, ended, error. */
  status: string;
}

export interface VoiceProvider {
  readonly name: 'simulator' | 'retell';
  listVoices(): Promise<VoiceEntry[]>;
  placeCall(request: PlaceCallRequest): Promise<ProviderCall>;
  /** The provider call carrying our call id in its metadata, if one was created. */
  findCall(callId: string, firm: string): Promise<ProviderCall | null>;
}

/** Maps the many ways providers spell gender to ours. */
export function normaliseGender(value: string | undefined | null): VoiceGender {
  const v = (value ?? '').trim().toLowerCase();
  if (['male', 'm', 'man'].includes(v)) return 'male';
  if (['female', 'f', 'woman'].includes(v)) return 'female';
  return 'neutral';
}
