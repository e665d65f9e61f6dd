// The read cache hands every caller its own deep copy of a cached document
// (core/platform/db/read-cache.ts `copyDocument`): the copy structuredClone would make, made
// without its serialisation round trip.
import { describe, expect, it } from 'vitest';
import { Binary } from 'mongodb';
import { copyDocument } from '../../core/platform/db/read-cache.js';

const firm = () => ({
  _id: 'acme',
  name: 'Acme',
  created_at: new Date('2026-01-02T03:04:05Z'),
  settings: {
    timezone: 'America/New_York',
    notification_emails: ['a@acme.test', 'b@acme.test'],
    calling_window: { start: '09:00', end: '20:00', days: [1, 2, 3, 4, 5] },
    max_concurrent_calls: 5,
    crm: null,
    nested: [[{ deep: true }], undefined],
  },
  sealed: new Binary(Buffer.from('secret')),
});

describe('copyDocument', () => {
  it('copies as structuredClone copies, dates and nested arrays included', () => {
    const doc = firm();
    const copy = copyDocument(doc) as ReturnType<typeof firm>;
    expect(copy).toEqual(structuredClone(doc));
    expect(copy.created_at).toBeInstanceOf(Date);
    expect(copy.created_at.getTime()).toBe(doc.created_at.getTime());
  });

  it('shares nothing with the original: a change to the copy reaches no one else', () => {
    const doc = firm();
    const copy = copyDocument(doc) as ReturnType<typeof firm>;
    copy.settings.notification_emails.push('c@acme.test');
    copy.settings.calling_window.days.pop();
    copy.created_at.setTime(0);
    (copy.settings.nested[0] as Array<{ deep: boolean }>)[0]!.deep = false;
    expect(doc).toEqual(firm());
    expect(copy.settings).not.toBe(doc.settings);
    expect(copy.sealed).not.toBe(doc.sealed);
  });

  it('keeps an own "__proto__" key an own key, never the prototype', () => {
    const doc = JSON.parse('{"a":{"__proto__":{"polluted":true}}}') as { a: Record<string, unknown> };
    const copy = copyDocument(doc) as { a: Record<string, unknown> };
    expect(Object.getPrototypeOf(copy.a)).toBe(Object.prototype);
    expect(Object.keys(copy.a)).toEqual(['__proto__']);
    expect((copy.a as { polluted?: boolean }).polluted).toBeUndefined();
  });
});
