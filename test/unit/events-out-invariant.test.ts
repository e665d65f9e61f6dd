// The chaos run's events-out invariant (scripts/chaos/invariants/events-out.ts): what counts as
// delivered, invented, unverified or repeated.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { eventsOutFindings, signedBy } from '../../scripts/chaos/invariants/events-out.js';
import { signedRequest } from '../../core/domain/events/deliveries.js';

const SECRET = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;
const delivered = (id: string, type: string, secret = SECRET, seq = 1) => {
  const r = signedRequest(
    [secret],
    id,
    type,
    new Date('2026-01-01T00:00:00Z'),
    '{}',
    new Date('2026-01-01T00:00:01Z'),
  );
  return { seq, path: '/f', headers: r.headers, body: r.body, status: 200 };
};
const signer = new Webhook(SECRET);

describe('events out invariant', () => {
  it('holds when every recorded event arrived, repeats allowed', () => {
    const f = eventsOutFindings(
      [
        { id: 'evt_a', firm: 'f', type: 'lead.created' },
        { id: 'evt_b', firm: 'f', type: 'call.ended' },
      ],
      new Map([
        [
          'f',
          [
            delivered('evt_a', 'lead.created'),
            delivered('evt_b', 'call.ended'),
            delivered('evt_a', 'lead.created'),
          ],
        ],
      ]),
      (_firm, d) => signedBy(signer, d),
    );
    expect(f).toEqual({ recorded: 2, missing: [], invented: [], unverified: [], repeats: 1 });
  });

  it('finds a missing event, an invented one, one of another type, and a bad signature; a ping is neither', () => {
    const other = `whsec_${Buffer.alloc(24, 9).toString('base64')}`;
    const f = eventsOutFindings(
      [
        { id: 'evt_a', firm: 'f', type: 'lead.created' },
        { id: 'evt_b', firm: 'f', type: 'call.ended' },
        { id: 'evt_c', firm: 'g', type: 'dnc.added' },
      ],
      new Map([
        [
          'f',
          [
            delivered('evt_a', 'lead.updated'),
            delivered('evt_x', 'lead.created'),
            delivered('ping_1', 'ping'),
          ],
        ],
        ['g', [delivered('evt_c', 'dnc.added', other)]],
      ]),
      (_firm, d) => signedBy(signer, d),
    );
    expect(f.missing.sort()).toEqual(['f/evt_a', 'f/evt_b']);
    expect(f.invented).toEqual(['f/evt_a', 'f/evt_x']);
    expect(f.unverified).toEqual(['g/evt_c']);
  });

  it('an event delivered to another firm does not count for its own', () => {
    const f = eventsOutFindings(
      [{ id: 'evt_a', firm: 'f', type: 'lead.created' }],
      new Map([['g', [delivered('evt_a', 'lead.created')]]]),
      () => true,
    );
    expect(f.missing).toEqual(['f/evt_a']);
    expect(f.invented).toEqual(['g/evt_a']);
  });
});
