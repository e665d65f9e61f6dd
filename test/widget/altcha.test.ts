// ALTCHA on widget keys with challenge "altcha" (docs/widget.md#altcha): GET /api/widget/challenge
// issues a challenge, solved here with altcha-lib as a browser would; the session succeeds only
// with a solution, once. Missing, wrong, another key's, expired and replayed solutions are refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createChallenge } from 'altcha-lib/v1';
import { altchaHmacKey, CHALLENGE_MAX_NUMBER } from '../../core/domain/widget/altcha.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { createAgent } from '../chat/chat-helpers.js';
import { askSession, createWidgetKey, solvedNumber, type WidgetKey } from './widget-key-helpers.js';

let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
const SITE = 'https://firm.example';

beforeAll(async () => {
  stack = await startStack();
  firm = await createFirm(stack);
  await createAgent(firm.client, firm.slug);
});
afterAll(async () => stack?.stop());

interface Challenge {
  algorithm: string;
  challenge: string;
  maxnumber: number;
  salt: string;
  signature: string;
}

/** GET /api/widget/challenge as a page on `origin` asks it (null: no Origin header). */
const askChallenge = (key: string, origin: string | null = SITE) =>
  stack.api.get(
    `/api/widget/challenge?key=${encodeURIComponent(key)}`,
    origin === null ? {} : { Origin: origin },
  );

/** What an ALTCHA widget sends: base64 of the JSON of the challenge with the number found. */
async function solve(challenge: Challenge): Promise<string> {
  const found = solvedNumber(challenge);
  expect(found, 'the challenge has a solution').not.toBeNull();
  const { algorithm, salt, signature } = challenge;
  return Buffer.from(
    JSON.stringify({
      algorithm,
      challenge: challenge.challenge,
      number: found!,
      salt,
      signature,
    }),
  ).toString('base64');
}

async function altchaKey(): Promise<WidgetKey> {
  return createWidgetKey(firm.client, firm.slug, { challenge: 'altcha' });
}

describe('ALTCHA challenges', () => {
  it('a challenge: SHA-256, bounded, naming the key, expiring within five minutes; no-store', async () => {
    const key = await altchaKey();
    const res = await askChallenge(key.key);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const c = res.body as Challenge;
    expect(c.algorithm).toBe('SHA-256');
    expect(c.maxnumber).toBe(CHALLENGE_MAX_NUMBER);
    expect(c.challenge).toMatch(/^[0-9a-f]{64}$/);
    expect(c.signature).toMatch(/^[0-9a-f]{64}$/);
    const params = new URLSearchParams(c.salt.split('?')[1]);
    expect(params.get('key')).toBe(key.id);
    const expires = Number(params.get('expires')) * 1000;
    expect(expires).toBeGreaterThan(Date.now());
    expect(expires).toBeLessThanOrEqual(Date.now() + 5 * 60_000 + 1000);
  });

  it('only for a page on one of the key’s origins; an unknown key is a 401', async () => {
    const key = await altchaKey();
    expectError(await askChallenge(key.key, 'https://evil.example'), 403, 'origin_not_allowed');
    expectError(await askChallenge(key.key, null), 403, 'origin_not_allowed');
    expectError(await askChallenge('iwpk_unknown'), 401, 'unauthorized');
  });

  it('the session succeeds with a solved challenge, once: the replay is 409 altcha_replayed', async () => {
    const key = await altchaKey();
    const altcha = await solve((await askChallenge(key.key)).body);
    const first = await askSession(stack.api, SITE, { key: key.key, altcha });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.settings.challenge).toBe('altcha');
    const replay = await askSession(stack.api, SITE, { key: key.key, altcha });
    expectError(replay, 409, 'altcha_replayed');
    expect(replay.text).not.toContain('iwt_');
  });

  it('no solution: 400 altcha_required', async () => {
    const key = await altchaKey();
    expectError(await askSession(stack.api, SITE, { key: key.key }), 400, 'altcha_required');
  });

  it('a wrong number, a forged signature, garbage, another key’s challenge: 400 altcha_invalid', async () => {
    const key = await altchaKey();
    const challenge = (await askChallenge(key.key)).body as Challenge;
    const right = JSON.parse(Buffer.from(await solve(challenge), 'base64').toString()) as { number: number };
    const wrongNumber = Buffer.from(
      JSON.stringify({ ...right, number: (right.number + 1) % CHALLENGE_MAX_NUMBER }),
    ).toString('base64');
    const forged = Buffer.from(
      JSON.stringify({
        ...right,
        signature: 'f'.repeat(64),
        challenge: challenge.challenge,
        salt: challenge.salt,
      }),
    ).toString('base64');
    const other = await altchaKey();
    const othersSolution = await solve((await askChallenge(other.key)).body);
    for (const altcha of [
      wrongNumber,
      forged,
      'not base64 json',
      Buffer.from('[1,2]').toString('base64'),
      Buffer.from(JSON.stringify({ ...right, algorithm: 'SHA-1' })).toString('base64'),
      othersSolution,
    ]) {
      expectError(await askSession(stack.api, SITE, { key: key.key, altcha }), 400, 'altcha_invalid');
    }
    // The other key's own solution is still good for it: refusing it elsewhere did not use it up.
    expect((await askSession(stack.api, SITE, { key: other.key, altcha: othersSolution })).status).toBe(200);
  });

  it('an expired challenge: 400 altcha_expired', async () => {
    const key = await altchaKey();
    const expired = await createChallenge({
      algorithm: 'SHA-256',
      hmacKey: altchaHmacKey(stack.config.sessionSecret),
      maxNumber: 1000,
      expires: new Date(Date.now() - 1000),
      params: { key: key.id },
    });
    const altcha = await solve({ ...expired, maxnumber: 1000 } as Challenge);
    expectError(await askSession(stack.api, SITE, { key: key.key, altcha }), 400, 'altcha_expired');
  });

  it('a key without a challenge ignores altcha; turning the challenge on applies at once', async () => {
    const key = await createWidgetKey(firm.client, firm.slug);
    expect((await askSession(stack.api, SITE, { key: key.key, altcha: 'anything' })).status).toBe(200);
    await firm.client.patch(`/api/widget-keys/${key.id}`, { challenge: 'altcha' });
    expectError(await askSession(stack.api, SITE, { key: key.key }), 400, 'altcha_required');
  });
});
