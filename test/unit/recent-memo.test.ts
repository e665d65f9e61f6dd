// The per-process memos keyed by what every call brings anew (its phone number, its sealed
// webhook secret) keep the answers of the last minute, not the last few thousand keys: under a
// steady load they stop growing within a minute (a long run saw a bound by count alone as a
// steady growth of the worker's heap). On the service clock, shifted here: nothing waits.
import { afterEach, describe, expect, it } from 'vitest';
import { clock } from '../../core/platform/clock.js';
import { RecentMemo } from '../../core/platform/recent-memo.js';
import { dialableSeen, parseDialable } from '../../core/domain/contact-points/phones.js';
import { placeOfNumber, placesSeen } from '../../core/domain/compliance/calling-hours.js';
import { openedSecrets } from '../../core/integrations/voice/simulator.js';

afterEach(() => clock.reset());

const numbers = (n: number, from: number) =>
  Array.from({ length: n }, (_, i) => `+1415${String(from + i).padStart(7, '0')}`);

describe('RecentMemo', () => {
  it('drops what went unused for its age, keeps what is used, and never holds more than its count', () => {
    const memo = new RecentMemo<string, number>(3, 1000);
    memo.set('a', 1);
    memo.set('b', 2);
    clock.shift(600);
    expect(memo.get('a')).toBe(1); // used: young again
    clock.shift(600);
    expect(memo.get('b')).toBeUndefined(); // 1,200 ms unused
    expect(memo.get('a')).toBe(1);
    expect(memo.size).toBe(1);
    memo.set('c', 3);
    memo.set('d', 4);
    memo.set('e', 5); // a fourth: the least recently used ('a') goes
    expect(memo.size).toBe(3);
    expect(memo.get('a')).toBeUndefined();
    clock.shift(1000);
    memo.set('f', 6);
    expect(memo.size).toBe(1);
  });

  it('refuses a bound that bounds nothing', () => {
    expect(() => new RecentMemo(0, 1000)).toThrow();
    expect(() => new RecentMemo(10, 0)).toThrow();
  });
});

describe('the memos of numbers and call secrets keep a minute of answers', () => {
  it('parseDialable: a thousand numbers, then a minute later one more, leaves one', () => {
    dialableSeen.clear();
    for (const n of numbers(1000, 2_000_000)) expect(parseDialable(n)?.country).toBe('US');
    expect(dialableSeen.size).toBe(1000);
    clock.shift(60_000);
    parseDialable('+14155550123');
    expect(dialableSeen.size).toBe(1);
  });

  it('placeOfNumber: a thousand numbers, then a minute later one more, leaves one', () => {
    placesSeen.clear();
    for (const n of numbers(1000, 3_000_000)) expect(placeOfNumber(n).region).toBe('US-CA');
    expect(placesSeen.size).toBe(1000);
    clock.shift(60_000);
    placeOfNumber('+14155550123');
    expect(placesSeen.size).toBe(1);
  });

  it("the simulator's opened secrets: a call's entry outlives its events, not the next minute", () => {
    openedSecrets.clear();
    for (let i = 0; i < 1000; i++) openedSecrets.set(`firm|iv${i}|data|tag`, `whsec_${i}`);
    clock.shift(30_000);
    expect(openedSecrets.get('firm|iv7|data|tag')).toBe('whsec_7');
    clock.shift(30_000);
    openedSecrets.set('firm|iv-next|data|tag', 'whsec_next');
    // The one used 30 s ago and the new one: the other 999 went unused for a minute.
    expect(openedSecrets.size).toBe(2);
  });
});
