import { verify as retellVerify } from 'retell-sdk';
import { hmacHex } from '../../platform/crypto.js';

// Retell's webhook signature: `x-retell-signature: v=<unix ms>,d=<hex HMAC-SHA256(raw body + ms)>`,
// keyed with the firm's voice_webhook_secret or Retell's account API key, and valid for five
// minutes either side of now.

export const RETELL_SIGNATURE_HEADER = 'x-retell-signature';

/** Signs a raw body exactly as Retell does (the simulator signs its webhooks with this). */
export function signRetellWebhook(rawBody: string, secret: string, timestampMs: number = Date.now()): string {
  return `v=${timestampMs},d=${hmacHex(secret, rawBody + String(timestampMs))}`;
}

const TOLERANCE_MS = 5 * 60 * 1000;
// Hex in either case, as retell-sdk's verifier takes it.
const FORM = /^v=(\d{10,16}),d=[0-9a-fA-F]{64}$/;

/**
 * What can be checked without the body: the header's form, and a timestamp within the same
 * 5-minute window retell-sdk's verifier allows. A request failing this is refused unread.
 */
export function isFreshRetellSignature(header: string, now: number = Date.now()): boolean {
  const match = FORM.exec(header.trim());
  return match !== null && Math.abs(now - Number(match[1])) <= TOLERANCE_MS;
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
