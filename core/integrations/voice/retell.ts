import Retell, { APIConnectionError, APIError } from 'retell-sdk';
import {
  ProviderError,
  normaliseGender,
  type PlaceCallRequest,
  type ProviderCall,
  type ProviderCallObject,
  type VoiceEntry,
  type VoiceProvider,
} from './provider.js';
import { own } from '../../platform/own.js';
import { tracedFetch } from '../../platform/telemetry/start.js';

interface RetellOptions {
  apiKey: string;
  baseUrl: string;
  /** Per-request timeout; a timed-out create is treated as "the call may exist". */
  timeoutMs?: number;
}

const DEFAULT_RETRY_AFTER_MS = 5000;
const MAX_RETRY_AFTER_MS = 60_000;

/** Retell through its official SDK. The SDK never retries (maxRetries 0): our queue owns retries. */
export class RetellProvider implements VoiceProvider {
  readonly name = 'retell' as const;
  // Retell plays the agent configured there and reports to the account's webhook.
  readonly playsOurScript = false;
  private readonly client: Retell;

  constructor(options: RetellOptions) {
    this.client = new Retell({
      apiKey: options.apiKey,
      baseURL: options.baseUrl,
      maxRetries: 0,
      timeout: options.timeoutMs ?? 30_000,
      // A client span per request when tracing is on (Node's fetch is not node:http).
      fetch: tracedFetch,
    });
  }

  async listVoices(): Promise<VoiceEntry[]> {
    const voices = await this.call(() => this.client.voice.list());
    return voices.map((v) => ({
      voice_id: v.voice_id,
      name: v.voice_name,
      language: languageOf(v),
      gender: normaliseGender(v.gender),
      provider: v.provider,
      ...(v.accent ? { accent: v.accent } : {}),
      ...(v.preview_audio_url ? { preview_audio_url: v.preview_audio_url } : {}),
    }));
  }

  async placeCall(request: PlaceCallRequest): Promise<ProviderCall> {
    if (!request.fromNumber) {
      throw new ProviderError(
        'rejected',
        `The firm "${request.firm}" has no settings.from_number; Retell needs a caller number to dial.`,
      );
    }
    const created = await this.call(() =>
      this.client.call.createPhoneCall({
        from_number: request.fromNumber!,
        to_number: request.toNumber,
        ...(request.providerAgentId ? { override_agent_id: request.providerAgentId } : {}),
        metadata: { call_id: request.callId, firm: request.firm, agent_id: request.agentId },
        retell_llm_dynamic_variables: request.dynamicVariables,
      }),
    );
    return { providerCallId: created.call_id, status: created.call_status };
  }

  async findCall(callId: string): Promise<ProviderCall | null> {
    const page = await this.call(() =>
      this.client.call.list({
        filter_criteria: { metadata: [{ key: 'call_id', op: 'eq', type: 'string', value: callId }] },
        sort_order: 'descending',
        limit: 50,
      }),
    );
    // Match on our side too: the filter is an optimisation, the metadata is the proof.
    const match = page.items.find(
      (c) => (c.metadata as { call_id?: unknown } | undefined)?.call_id === callId,
    );
    return match === undefined ? null : { providerCallId: match.call_id, status: match.call_status };
  }

  async getCall(providerCallId: string): Promise<ProviderCallObject | null> {
    try {
      const call = await this.call(() => this.client.call.retrieve(providerCallId));
      return call as unknown as ProviderCallObject;
    } catch (err) {
      if (err instanceof ProviderError && err.status === 404) return null;
      throw err;
    }
  }

  /** Runs one SDK request and turns its failures into ProviderError kinds. */
  private async call<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (err) {
      throw toProviderError(err);
    }
  }
}

function toProviderError(err: unknown): ProviderError {
  if (err instanceof ProviderError) return err;
  // Connection failures and timeouts: the request may have reached Retell.
  if (err instanceof APIConnectionError) {
    return new ProviderError('retryable', `Retell could not be reached: ${err.message}`, { cause: err });
  }
  if (err instanceof APIError) {
    const status = err.status as number | undefined;
    const message = `Retell answered ${status ?? 'without a status'}: ${err.message}`;
    if (status === 429) {
      return new ProviderError('rate_limited', message, {
        status,
        retryAfterMs: retryAfterMs(err.headers),
        callMayExist: false,
        cause: err,
      });
    }
    if (status === undefined || status >= 500 || status === 408) {
      return new ProviderError('retryable', message, { ...(status ? { status } : {}), cause: err });
    }
    return new ProviderError('rejected', message, { status, callMayExist: false, cause: err });
  }
  return new ProviderError('retryable', `Retell request failed: ${(err as Error)?.message ?? String(err)}`, {
    cause: err,
  });
}

/** Retry-After in seconds or as an HTTP date; a bounded default when absent. */
function retryAfterMs(headers: Headers | undefined): number {
  const value = headers?.get('retry-after-ms') ?? null;
  if (value !== null && Number.isFinite(Number(value))) return clamp(Number(value));
  const header = headers?.get('retry-after') ?? null;
  if (header === null) return DEFAULT_RETRY_AFTER_MS;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return clamp(seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? DEFAULT_RETRY_AFTER_MS : clamp(date - Date.now());
}

const clamp = (ms: number): number => Math.min(MAX_RETRY_AFTER_MS, Math.max(250, Math.round(ms)));

// Retell's voice list carries an accent but no language; the accent names the locale.
const ACCENT_LOCALES: Record<string, string> = {
  american: 'en-US',
  british: 'en-GB',
  english: 'en-GB',
  scottish: 'en-GB',
  irish: 'en-IE',
  australian: 'en-AU',
  'new zealand': 'en-NZ',
  canadian: 'en-CA',
  indian: 'en-IN',
  'south african': 'en-ZA',
  spanish: 'es-ES',
  castilian: 'es-ES',
  mexican: 'es-MX',
  'latin american': 'es-MX',
  argentinian: 'es-AR',
  colombian: 'es-CO',
  french: 'fr-FR',
  parisian: 'fr-FR',
  'canadian french': 'fr-CA',
  german: 'de-DE',
  italian: 'it-IT',
  portuguese: 'pt-PT',
  brazilian: 'pt-BR',
  dutch: 'nl-NL',
  polish: 'pl-PL',
  russian: 'ru-RU',
  turkish: 'tr-TR',
  arabic: 'ar-SA',
  hindi: 'hi-IN',
  japanese: 'ja-JP',
  korean: 'ko-KR',
  chinese: 'zh-CN',
  mandarin: 'zh-CN',
  vietnamese: 'vi-VN',
};

function languageOf(voice: { accent?: string; language?: unknown }): string {
  if (typeof voice.language === 'string' && /^[a-z]{2,3}(?:-[A-Z]{2})?$/.test(voice.language)) {
    return voice.language;
  }
  const accent = (voice.accent ?? '').trim().toLowerCase();
  return own(ACCENT_LOCALES, accent) ?? 'en-US';
}
