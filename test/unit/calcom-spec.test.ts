import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { derive } from '../../scripts/providers/derive.js';
import { PROVIDER_TARGETS } from '../../scripts/providers/targets.js';
import { loadSpec } from '../fakes/spec/openapi-spec.js';

// Cal.com's API v2 document as our fakes are judged by it (test/fakes/spec/calcom-v2.json): the
// operations our client calls, re-derivable by `npm run providers:derive`, and two readings the
// checker needs for a NestJS-generated document: an input body listed under `oneOf` with classes
// that extend one another is taken when it fits any of them, and `{type: "object"}` (swagger's
// `type: Object`, e.g. a booking's metadata) is a free-form map.

const cal = loadSpec('calcom-v2');
const headers = { 'content-type': 'application/json', 'cal-api-version': '2024-08-13' };

describe("Cal.com's document", () => {
  it('holds exactly the operations the client calls, and deriving it again changes nothing', () => {
    const target = PROVIDER_TARGETS.find((t) => t.name === 'calcom-v2')!;
    const committed = JSON.parse(
      readFileSync(new URL('../fakes/spec/calcom-v2.json', import.meta.url), 'utf8'),
    );
    const listed = Object.entries(committed.paths as Record<string, Record<string, unknown>>).flatMap(
      ([path, item]) => Object.keys(item).map((method) => `${method} ${path}`),
    );
    expect(listed.sort()).toEqual(target.operations.map(([m, p]) => `${m} ${p}`).sort());
    expect(committed['x-derived-from']).toMatchObject({
      repository: 'github.com/calcom/cal.com',
      path: 'apps/api/v2/swagger/documentation.json',
      commit: expect.stringMatching(/^[0-9a-f]{40}$/),
    });
    expect(derive(target, committed, committed['x-derived-from'])).toEqual(committed);
  });

  it('takes a plain booking body (it fits the regular and the recurring input alike)', () => {
    const verdict = cal.checkRequest({
      method: 'POST',
      path: '/v2/bookings',
      headers,
      body: {
        start: '2026-12-01T17:00:00Z',
        eventTypeId: 42,
        attendee: { name: 'A', email: 'a@example.com', timeZone: 'UTC', language: 'en' },
        metadata: { intake_appointment_id: 'appt_1' },
      },
    });
    expect(verdict.problems).toEqual([]);
  });

  it('refuses a body without the attendee, a language off its enum, and a reschedule without start', () => {
    const missing = cal.checkRequest({
      method: 'POST',
      path: '/v2/bookings',
      headers,
      body: { start: '2026-12-01T17:00:00Z', eventTypeId: 42 },
    });
    expect(missing.problems.join('\n')).toMatch(/attendee/);
    const language = cal.checkRequest({
      method: 'POST',
      path: '/v2/bookings',
      headers,
      body: {
        start: '2026-12-01T17:00:00Z',
        eventTypeId: 42,
        attendee: { name: 'A', email: 'a@example.com', timeZone: 'UTC', language: 'EN' },
      },
    });
    expect(language.problems.join('\n')).toMatch(/must be one of/);
    const reschedule = cal.checkRequest({
      method: 'POST',
      path: '/v2/bookings/abc/reschedule',
      headers,
      body: { reschedulingReason: 'x' },
    });
    expect(reschedule.match?.params).toEqual({ bookingUid: 'abc' });
    expect(reschedule.problems.join('\n')).toMatch(/start/);
  });

  it('reads a free-form object (a booking’s metadata) as open, the envelope and the booking as closed', () => {
    const match = cal.match('GET', '/v2/bookings/abc')!;
    const booking = {
      id: 1,
      uid: 'abc',
      title: 'T',
      description: '',
      hosts: [],
      status: 'accepted',
      start: '2026-12-01T17:00:00.000Z',
      end: '2026-12-01T17:30:00.000Z',
      duration: 30,
      eventTypeId: 42,
      eventType: { id: 42, slug: 'x' },
      location: '',
      absentHost: false,
      createdAt: '2026-11-28T00:00:00.000Z',
      updatedAt: null,
      metadata: { intake_appointment_id: 'appt_1', firm: 'f' },
      // With no attendee a booking would fit a seated booking's branch too (Cal.com's branches
      // are open): a booking always has its attendee.
      attendees: [
        { name: 'A', email: 'a@example.com', displayEmail: 'a@example.com', timeZone: 'UTC', absent: false },
      ],
      bookingFieldsResponses: { notes: 'n' },
    };
    expect(cal.checkResponse(match, 200, { status: 'success', data: booking })).toEqual([]);
    expect(
      cal.checkResponse(match, 200, { status: 'success', data: booking, pagination: {} }).join('\n'),
    ).toMatch(/pagination/);
    // A booking is one branch of the answer's oneOf: a field it does not have is still refused.
    expect(
      cal.checkResponse(match, 200, { status: 'success', data: { ...booking, seatUid: 'x' } }).join('\n'),
    ).toMatch(/seatUid/);
  });
});
