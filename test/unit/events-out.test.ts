// Events out, the pure parts: event ids, filters and wildcards, the retry schedule with jitter
// and Retry-After, the signature as the Standard Webhooks library verifies it.
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { eventIdOf } from '../../core/domain/events/record-event.js';
import { isEventFilter, matchesFilter, newSigningSecret } from '../../core/domain/events/endpoints.js';
import {
  MAX_RETRY_AFTER_MS,
  nextRetryDelay,
  parseSchedule,
} from '../../core/domain/events/retry-schedule.js';
import { deliveryIdOf, publicDeliveryId, signedRequest } from '../../core/domain/events/deliveries.js';

describe('event ids', () => {
  it('are derived from firm, type, subject and key: the same change, the same id', () => {
    const input = { firm: 'f', type: 'lead.updated' as const, subject: 'lead_1', key: 'v2' };
    expect(eventIdOf(input)).toMatch(/^evt_[a-z2-7]{26}$/);
    expect(eventIdOf(input)).toBe(eventIdOf({ ...input }));
    expect(eventIdOf({ ...input, key: 'v3' })).not.toBe(eventIdOf(input));
    expect(eventIdOf({ ...input, firm: 'g' })).not.toBe(eventIdOf(input));
  });
});

describe('filters', () => {
  it('take types, dotted-prefix wildcards and *', () => {
    for (const ok of ['*', 'call.*', 'contacts.*', 'contacts.import.*', 'dnc.added', 'appointment.booked'])
      expect(isEventFilter(ok)).toBe(true);
    for (const bad of ['calls.*', 'call', 'call.', '*.ended', 'lead.deleted', 'ping', ''])
      expect(isEventFilter(bad)).toBe(false);
    expect(matchesFilter(['call.*'], 'call.ended')).toBe(true);
    expect(matchesFilter(['call.*'], 'campaign.launched')).toBe(false);
    expect(matchesFilter(['contacts.*'], 'contacts.sync.completed')).toBe(true);
    expect(matchesFilter(['*'], 'dnc.added')).toBe(true);
    expect(matchesFilter(['lead.created'], 'lead.updated')).toBe(false);
  });
});

describe('the retry schedule', () => {
  const schedule = parseSchedule(['5s', '5m', '30m', '2h', '5h', '10h', '10h']);
  it('reads durations', () => {
    expect(schedule).toEqual([5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(parseSchedule(['250ms', '1d'])).toEqual([250, 86_400_000]);
  });
  it('waits the scheduled time ±20 %, honours a longer Retry-After up to a day, and ends', () => {
    expect(nextRetryDelay(schedule, 1, null, 0)).toBe(4000);
    expect(nextRetryDelay(schedule, 1, null, 0.999_999)).toBe(6000);
    expect(nextRetryDelay(schedule, 2, null, 0.5)).toBe(300_000);
    expect(nextRetryDelay(schedule, 1, 60_000, 0.5)).toBe(60_000);
    expect(nextRetryDelay(schedule, 2, 1000, 0.5)).toBe(300_000);
    expect(nextRetryDelay(schedule, 1, 10 * 86_400_000, 0.5)).toBe(MAX_RETRY_AFTER_MS);
    expect(nextRetryDelay(schedule, 7, null, 0.5)).toBe(36_000_000);
    expect(nextRetryDelay(schedule, 8, null, 0.5)).toBeNull();
  });
});

describe('signing', () => {
  it('signs with every secret given; the library verifies with each, and refuses a changed body', () => {
    const [a, b] = [newSigningSecret(), newSigningSecret()];
    expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const r = signedRequest(
      [a, b],
      'evt_x',
      'lead.created',
      new Date('2026-01-01T00:00:00Z'),
      '{"id":"lead_1"}',
    );
    expect(JSON.parse(r.body)).toEqual({
      type: 'lead.created',
      timestamp: '2026-01-01T00:00:00.000Z',
      data: { id: 'lead_1' },
    });
    expect(r.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(a).verify(r.body, r.headers)).toBeTruthy();
    expect(new Webhook(b).verify(r.body, r.headers)).toBeTruthy();
    expect(() => new Webhook(newSigningSecret()).verify(r.body, r.headers)).toThrow();
    expect(() => new Webhook(a).verify(r.body.replace('lead_1', 'lead_2'), r.headers)).toThrow();
  });
});

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  it('keeps repeated waits (10h,10h is two retries)', () => {
    expect(parseSchedule('5s, 5m,10h,10h')).toEqual([5000, 300_000, 36_000_000, 36_000_000]);
  });
});

describe('delivery ids', () => {
  it('round-trip, and anything not issued (control characters, no separator) is no id', () => {
    const id = 'whep_x|abc|0001795918203878|evt_abc';
    expect(deliveryIdOf(publicDeliveryId(id))).toBe(id);
    expect(deliveryIdOf(`dlv_${Buffer.from('a|\u0000b').toString('base64url')}`)).toBeNull();
    expect(deliveryIdOf(`dlv_${Buffer.from('nosep').toString('base64url')}`)).toBeNull();
    expect(deliveryIdOf('evt_abc')).toBeNull();
  });
});
