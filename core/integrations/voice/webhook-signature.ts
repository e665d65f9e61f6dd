import { verify as retellVerify } from 'retell-sdk';
import { hmacHex } from '../../platform/crypto.js';

// Retell's webhook signature: `x-retell-signature: v=<unix ms>,d=<hex HMAC-SHA256(raw body + ms)>`,
// keyed with the firm's voice_webhook_secret and valid for five minutes either side of now.

export const RETELL_SIGNATURE_HEADER = 'x-retell-signature';

/** Signs a raw body exactly as Retell does (the simulator signs its webhooks with this). */
export function signRetellWebhook(rawBody: string, secret: string, timestampMs: number = Date.now()): string {
  return `v=${timestampMs},d=${hmacHex(secret, rawBody + String(timestampMs))}`;
}

/** Checks a signature with retell-sdk's own verifier (constant-time HMAC, 5-minute window). */
export async function verifyRetellSignature(
  rawBody: string,
  secret: string,
  header: string,
): Promise<boolean> {
  if (header.length > 512) return false;
  try {
    return await retellVerify(rawBody, secret, header.trim());
  } catch {
    return false;
  }
}
