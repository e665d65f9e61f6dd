// A failed bench run's last line names what failed: fetch's "fetch failed" says why only in its
// cause (a refused connection, a socket the server closed), so the causes are printed too.
import { describe, expect, it } from 'vitest';
import { described } from '../../bench/lib/measure.js';

describe("a failed bench run's error", () => {
  it('is printed with its causes, nearest first', () => {
    const socket = new Error('other side closed');
    const text = described(
      new TypeError('fetch failed', { cause: new Error('request failed', { cause: socket }) }),
    );
    const lines = text.split('\n').filter((line) => !line.trimStart().startsWith('at '));
    expect(lines).toEqual([
      'TypeError: fetch failed',
      '  caused by: Error: request failed',
      '  caused by: Error: other side closed',
    ]);
  });

  it('stops after three causes, and prints what is not an Error as it is', () => {
    let err: Error = new Error('root');
    for (let i = 0; i < 6; i++) err = new Error(`level ${i}`, { cause: err });
    expect(described(err).match(/caused by:/g)).toHaveLength(3);
    expect(described('a string thrown')).toBe('a string thrown');
  });
});
