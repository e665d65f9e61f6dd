// Our Retell signature check answers as retell-sdk's own `verify` does (it replaced it on the
// webhook path: it checks the body's bytes as received instead of encoding the text again), and
// signatures from retell-sdk's `sign` pass it.
import { describe, expect, it } from 'vitest';
import { sign as retellSign, verify as retellVerify } from 'retell-sdk';
import { signRetellWebhook, verifyRetellSignature } from '../../core/integrations/voice/webhook-signature.js';

const SECRET = 'key_0123456789abcdef';
const BODY = JSON.stringify({
  event: 'call_analyzed',
  call: { call_id: 'c1', transcript: 'Grüß Gott — ¿cómo está?' },
});

describe('verifyRetellSignature', () => {
  it('accepts what retell-sdk signs, over the text or its bytes', async () => {
    const header = await retellSign(BODY, SECRET);
    expect(verifyRetellSignature(BODY, SECRET, header)).toBe(true);
    expect(verifyRetellSignature(Buffer.from(BODY), SECRET, header)).toBe(true);
    const upperHex = header.replace(/d=([0-9a-f]+)$/, (_, hex: string) => `d=${hex.toUpperCase()}`);
    expect(await retellVerify(BODY, SECRET, upperHex)).toBe(true);
    expect(verifyRetellSignature(Buffer.from(BODY), SECRET, upperHex)).toBe(true);
  });

  it('answers every header as retell-sdk verify does', async () => {
    const now = Date.now();
    const good = signRetellWebhook(BODY, SECRET, now);
    const digest = good.split(',d=')[1]!;
    const headers = [
      good,
      signRetellWebhook(BODY, SECRET, now - 4 * 60_000),
      signRetellWebhook(BODY, SECRET, now - 6 * 60_000), // stale
      signRetellWebhook(BODY, SECRET, now + 6 * 60_000), // future
      signRetellWebhook(`${BODY} `, SECRET, now), // another body
      signRetellWebhook(BODY, 'another secret', now), // another key
      `v=${now},d=${digest.slice(0, 63)}`, // short digest
      `v=${now},d=${digest}00`, // long digest
      `v=${now},d=${digest.slice(0, 63)}g`, // not hex
      `v=0${now},d=${digest}`, // a leading zero: retell-sdk signs the number
      `v=${now};d=${digest}`,
      `d=${digest},v=${now}`,
      '',
      'v=,d=',
    ];
    for (const header of headers) {
      const theirs = await retellVerify(BODY, SECRET, header);
      expect({ header, ours: verifyRetellSignature(Buffer.from(BODY), SECRET, header, Date.now()) }).toEqual({
        header,
        ours: theirs,
      });
    }
    expect(headers.filter((h) => verifyRetellSignature(BODY, SECRET, h))).toHaveLength(3);
  });

  it('refuses a body whose bytes differ from the signed text, and an overlong header', () => {
    const header = signRetellWebhook(BODY, SECRET);
    const bytes = Buffer.from(BODY);
    bytes.writeUInt8(bytes.readUInt8(bytes.length - 3) ^ 1, bytes.length - 3);
    expect(verifyRetellSignature(bytes, SECRET, header)).toBe(false);
    expect(verifyRetellSignature(BODY, SECRET, `${header}${' '.repeat(600)}`)).toBe(false);
  });
});
