// A person's name in what they said or typed (core/domain/intake/names.ts): after "my name is"
// in any case, after an introduction only when capitalised, and as a bare answer only when asked.
import { describe, expect, it } from 'vitest';
import { extractName, splitName } from '../../core/domain/intake/names.js';

describe('extractName', () => {
  it.each([
    ['my name is Jane Doe', 'Jane Doe'],
    ['Sure, it is Jane Doe.', 'Jane Doe'],
    ['Hi, my name is jane doe and I need help', 'Jane Doe'],
    ["I'm Jane", 'Jane'],
    ["Hello, I'm Jane Doe, I was in an accident", 'Jane Doe'],
    ['This is Carlos Alberto Ruiz.', 'Carlos Alberto Ruiz'],
    ['call me Sam', 'Sam'],
    ["my name's mary-jane o'neil", "Mary-Jane O'Neil"],
    ['My name is McDonald', 'McDonald'],
  ])('finds the name in %j', (text, name) => {
    expect(extractName(text)).toBe(name);
  });

  it.each([
    "I'm calling about a car accident",
    "I'm not sure what to do",
    'this is urgent',
    'I was hurt at work',
    'Jane Doe', // a bare name only counts as the answer to a name question
  ])('finds no name in %j', (text) => {
    expect(extractName(text)).toBeNull();
  });

  it('accepts a bare answer to a name question, and rejects sentences', () => {
    expect(extractName('jane doe', { bare: true })).toBe('Jane Doe');
    expect(extractName('Jane', { bare: true })).toBe('Jane');
    expect(extractName('Sure, jane doe', { bare: true })).toBe('Jane Doe');
    expect(extractName('Jane Doe, jane@example.com', { bare: true })).toBe('Jane Doe');
    expect(extractName("I don't know", { bare: true })).toBeNull();
    expect(extractName('why do you need that?', { bare: true })).toBeNull();
    expect(extractName('415 555 0123', { bare: true })).toBeNull();
  });

  it('formats a name written in capitals or lower case, and keeps mixed case as written', () => {
    expect(extractName('MY NAME IS JOHN SMITH')).toBe('John Smith');
    expect(extractName('my name is jean-luc picard')).toBe('Jean-Luc Picard');
    expect(extractName('my name is DeShawn McKay')).toBe('DeShawn McKay');
  });

  it('takes at most four name words, and stops at punctuation', () => {
    expect(extractName('my name is Ana María García López Ortega')).toBe('Ana María García López');
    expect(extractName("I'm Jane. I need help")).toBe('Jane');
    expect(extractName('my name is Jane Doe, and I was hurt')).toBe('Jane Doe');
  });

  it.each(['', 'my name is 12345', 'my name is, well', '!!!', '   '])(
    'finds no name in %j, even as a bare answer',
    (text) => {
      expect(extractName(text)).toBeNull();
      expect(extractName(text, { bare: true })).toBeNull();
    },
  );

  it('refuses a bare answer of more than four words', () => {
    expect(extractName('Anna Bella Carla Dora Emma', { bare: true })).toBeNull();
    expect(extractName('Anna Bella Carla Dora', { bare: true })).toBe('Anna Bella Carla Dora');
  });

  it('finds a name after a long text without slowing down', () => {
    expect(extractName(`${'word '.repeat(20_000)}my name is Bo`)).toBe('Bo');
  });
});

describe('splitName', () => {
  it('splits the first word from the rest', () => {
    expect(splitName('Jane')).toEqual({ first_name: 'Jane', last_name: null });
    expect(splitName('Carlos Alberto Ruiz')).toEqual({ first_name: 'Carlos', last_name: 'Alberto Ruiz' });
    expect(splitName("Mary-Jane  O'Neil")).toEqual({ first_name: 'Mary-Jane', last_name: "O'Neil" });
  });

  it('gives two nulls for no name', () => {
    expect(splitName(null)).toEqual({ first_name: null, last_name: null });
  });
});
