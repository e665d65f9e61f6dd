// The call webhook checks x-retell-signature with node:crypto in one synchronous call instead
// of retell-sdk's Web Crypto verifier (which cost the receiver about a quarter of its CPU per
// delivery, README "Performance"). It must give retell-sdk's answer for every header.
import { describe, expect, it } from 'vitest';
import { sign as retellSign, verify as retellVerify } from 'retell-sdk';
import { signRetellWebhook, verifyRetellSignature } from '../../core/integrations/voice/webhook-signature.js';

const SECRET = 'key_0123456789abcdef0123456789abcdef';
const BODY = JSON.stringify({
  event: 'call_ended',
  call: { call_id: 'call_1', transcript: 'Agent: Héllo ✓' },
});

async function both(body: string, secret: string, header: string): Promise<[boolean, boolean]> {
  return [verifyRetellSignature(body, secret, header), await retellVerify(body, secret, header)];
}

describe('verifyRetellSignature agrees with retell-sdk', () => {
  it('accepts what retell-sdk signs, and what the simulator signs', async () => {
    expect(await both(BODY, SECRET, await retellSign(BODY, SECRET))).toEqual([true, true]);
    expect(await both(BODY, SECRET, signRetellWebhook(BODY, SECRET))).toEqual([true, true]);
  });

  it('accepts the digest in upper case, as retell-sdk does', async () => {
    const header = signRetellWebhook(BODY, SECRET).replace(
      /d=([0-9a-f]+)/,
      (_, d: string) => `d=${d.toUpperCase()}`,
    );
    expect(await both(BODY, SECRET, header)).toEqual([true, true]);
  });

  it('refuses another body, another secret, a changed timestamp or digest', async () => {
    const header = signRetellWebhook(BODY, SECRET);
    expect(await both(`${BODY} `, SECRET, header)).toEqual([false, false]);
    expect(await both(BODY, `${SECRET}x`, header)).toEqual([false, false]);
    const [, stamp, digest] = /^v=(\d+),d=([0-9a-f]+)$/.exec(header)!;
    expect(await both(BODY, SECRET, `v=${Number(stamp) + 1},d=${digest}`)).toEqual([false, false]);
    const flipped = `${digest!.slice(0, -1)}${digest!.endsWith('0') ? '1' : '0'}`;
    expect(await both(BODY, SECRET, `v=${stamp},d=${flipped}`)).toEqual([false, false]);
  });

  it('refuses timestamps more than 5 minutes away, either side', async () => {
    for (const offset of [-5 * 60_000 - 5000, 5 * 60_000 + 5000]) {
      const header = signRetellWebhook(BODY, SECRET, Date.now() + offset);
      expect(await both(BODY, SECRET, header)).toEqual([false, false]);
    }
    const recent = signRetellWebhook(BODY, SECRET, Date.now() - 4 * 60_000);
    expect(await both(BODY, SECRET, recent)).toEqual([true, true]);
  });

  it('refuses malformed headers', async () => {
    const stamp = Date.now();
    const digest = signRetellWebhook(BODY, SECRET, stamp).split(',d=')[1]!;
    for (const header of [
      '',
      `v=${stamp}`,
      `d=${digest}`,
      `v=${stamp},d=${digest.slice(2)}`,
      `v=${stamp},d=${digest}00`,
      `v=${stamp},d=${digest.slice(0, -1)}g`,
      `v=abc,d=${digest}`,
      `v=${stamp};d=${digest}`,
    ]) {
      expect(await both(BODY, SECRET, header), header).toEqual([false, false]);
    }
    expect(verifyRetellSignature(BODY, SECRET, `v=${stamp},d=${digest}${' '.repeat(600)}`)).toBe(false);
  });
});
