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

/**
 * Every key a firm's call webhook may be signed with: the firm's own key (as
 * above), and the platform's RETELL_API_KEY — Retell signs its webhooks with the account's API
 * key, so a firm without a voice_webhook_secret of its own is still heard.
 */
export function voiceWebhookSecrets(config: Config, firm: string, secret: string | undefined): string[] {
  const keys = [voiceWebhookSecret(config, firm, secret), config.retellApiKey];
  return keys.filter((key): key is string => typeof key === 'string' && key !== '');
}
