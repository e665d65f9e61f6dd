// ALTCHA proof of work for widget keys with `challenge: "altcha"` (docs/widget.md#altcha): abuse
// protection that calls no outside service. GET /api/widget/challenge issues a challenge signed
// with an HMAC key derived from SESSION_SECRET for this one purpose, naming the widget key and
// expiring after CHALLENGE_TTL_MS; the browser finds the number whose SHA-256 with the salt is the
// challenge, and POST /api/widget/session brings the solution as `altcha` (base64 of the JSON
// {algorithm, challenge, number, salt, signature}, as ALTCHA widgets send it). A solution opens
// one session: it is claimed in Redis (SET NX) until its challenge expires.
import { createHmac } from 'node:crypto';
import { createChallenge, extractParams, verifySolution } from 'altcha-lib/v1';
import type { Challenge, Payload } from 'altcha-lib/v1/types';
import { AppError } from '../../platform/errors.js';
import { sha256Hex } from '../../platform/crypto.js';
import { redisKeys } from '../../platform/redis-keys.js';
import type { Services } from '../../wiring/services.js';
import type { WidgetKeyDoc } from './widget-keys.js';

/** How long a challenge may be solved and used: long enough for a slow phone, short for a hoard. */
export const CHALLENGE_TTL_MS = 5 * 60_000;
/** The largest secret number: a browser tries half of them on average (tens of milliseconds). */
export const CHALLENGE_MAX_NUMBER = 100_000;
const ALGORITHM = 'SHA-256';

/** The HMAC key challenges are signed with (hex), derived from SESSION_SECRET for this use only. */
export const altchaHmacKey = (sessionSecret: string): string =>
  createHmac('sha256', sessionSecret).update('intake altcha challenge v1').digest('hex');

/** A challenge for this key's sessions, valid for CHALLENGE_TTL_MS. */
export function issueChallenge(services: Services, doc: WidgetKeyDoc): Promise<Challenge> {
  return createChallenge({
    algorithm: ALGORITHM,
    hmacKey: altchaHmacKey(services.config.sessionSecret),
    maxNumber: CHALLENGE_MAX_NUMBER,
    expires: new Date(Date.now() + CHALLENGE_TTL_MS),
    params: { key: doc._id },
  });
}

const refused = (status: number, code: string, message: string): AppError =>
  new AppError(status, code, message);

const altchaInvalid = (): AppError =>
  refused(
    400,
    'altcha_invalid',
    'The altcha solution is not a solved challenge of this widget key; solve a new one.',
  );

/** The solution's fields, if it has the shape of one (nothing else reaches the verifier). */
function parsePayload(altcha: string): Payload | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(altcha, 'base64').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const p = parsed as Record<string, unknown>;
  const hex64 = (v: unknown) => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);
  if (p.algorithm !== ALGORITHM || !hex64(p.challenge) || !hex64(p.signature)) return null;
  if (typeof p.number !== 'number' || !Number.isInteger(p.number) || p.number < 0) return null;
  if (p.number > CHALLENGE_MAX_NUMBER || typeof p.salt !== 'string' || p.salt.length > 512) return null;
  return {
    algorithm: ALGORITHM,
    challenge: p.challenge as string,
    number: p.number,
    salt: p.salt,
    signature: p.signature as string,
  };
}

/** 400 altcha_required: a session of a key with a challenge came without a solution. */
export const altchaRequired = (): AppError =>
  refused(
    400,
    'altcha_required',
    'This widget key requires a solved ALTCHA challenge (GET /api/widget/challenge?key=) in altcha.',
  );

/**
 * Checks and uses up the session's ALTCHA solution: 400 altcha_required (none), altcha_invalid
 * (not a solution of a challenge this service issued for this key), altcha_expired; 409
 * altcha_replayed (already used).
 */
export async function spendSolution(
  services: Services,
  doc: WidgetKeyDoc,
  altcha: string | undefined,
): Promise<void> {
  if (altcha === undefined) throw altchaRequired();
  const payload = parsePayload(altcha);
  if (payload === null) throw altchaInvalid();
  if (!(await verifySolution(payload, altchaHmacKey(services.config.sessionSecret), false)))
    throw altchaInvalid();
  const params = extractParams(payload);
  if (params.key !== doc._id) throw altchaInvalid();
  const expiresMs = Number(params.expires) * 1000;
  const left = expiresMs - Date.now();
  if (!Number.isFinite(expiresMs)) throw altchaInvalid();
  if (left <= 0) throw refused(400, 'altcha_expired', 'The altcha challenge has expired; solve a new one.');
  const claimed = await services.redis.set(
    redisKeys(services.config).altchaSpent(sha256Hex(payload.challenge)),
    '1',
    'PX',
    Math.ceil(left),
    'NX',
  );
  if (claimed === null) {
    throw refused(409, 'altcha_replayed', 'This altcha solution was already used; solve a new challenge.');
  }
}
