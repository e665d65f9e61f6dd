import { hmacHex } from '../../platform/crypto.js';
import type { Config } from '../../platform/config.js';

/**
 * The key a firm's call webhooks are signed with (x-retell-signature): the firm's
 * voice_webhook_secret; else, with the built-in simulator as the voice provider, a key derived
 * from the platform key for this one purpose and this firm — the platform key itself never
 * leaves the process. Null when neither applies (only a bearer token can authenticate then).
 */
export function voiceWebhookSecret(config: Config, firm: string, secret: string | undefined): string | null {
  if (secret) return secret;
  if (config.voiceProvider !== 'simulator') return null;
  return hmacHex(config.adminApiKey, `intake-service/simulator-webhook/v1|${firm}`);
}

/** The firm's own key a call webhook may be signed with (as above), as a list: empty when none. */
export function voiceWebhookSecrets(config: Config, firm: string, secret: string | undefined): string[] {
  const key = voiceWebhookSecret(config, firm, secret);
  return key === null || key === '' ? [] : [key];
}

/**
 * The platform's RETELL_API_KEY: Retell signs every webhook of the shared account with it, so it
 * proves the delivery came from Retell, not which firm it is for. A delivery signed only with it
 * is taken by the firm that owns the call (core/domain/calls/call-owner.ts).
 */
export function sharedVoiceWebhookSecrets(config: Config): string[] {
  return config.retellApiKey === undefined || config.retellApiKey === '' ? [] : [config.retellApiKey];
}
