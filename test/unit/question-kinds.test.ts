// How the answer to an intake question is read, decided by the question's key
// (core/domain/intake/question-kinds.ts).
import { describe, expect, it } from 'vitest';
import { questionKind, readAnswer } from '../../core/domain/intake/question-kinds.js';

describe('questionKind', () => {
  it.each([
    ['email', 'email'],
    ['E_Mail', 'email'],
    ['work_email_address', 'email'],
    ['phone', 'phone'],
    ['mobile_number', 'phone'],
    ['callback', 'phone'],
    ['full_name', 'name'],
    ['Caller_Name', 'name'],
    ['case_type', 'case_type'],
    ['practice_area', 'case_type'],
    // Only whole name and case-type keys: these are text.
    ['name_of_employer', 'text'],
    ['previous_case_type_notes', 'text'],
    ['description', 'text'],
    ['', 'text'],
    ['constructor', 'text'],
  ])('%j is a %s question', (key, kind) => {
    expect(questionKind(key)).toBe(kind);
  });
});

describe('readAnswer', () => {
  it('reads a phone in E.164, in the country given', () => {
    expect(readAnswer('phone', 'sure, 415 555 0123')).toBe('+14155550123');
    expect(readAnswer('phone', '020 7946 0018', 'GB')).toBe('+442079460018');
    expect(readAnswer('phone', 'I would rather not')).toBeNull();
  });

  it('reads an email, written or spoken', () => {
    expect(readAnswer('email', 'Jane@Example.com')).toBe('jane@example.com');
    expect(readAnswer('email', 'jane at example dot com')).toBe('jane@example.com');
    expect(readAnswer('email', 'no email')).toBeNull();
  });

  it('reads a bare name, and no sentence as one', () => {
    expect(readAnswer('name', 'jane doe')).toBe('Jane Doe');
    expect(readAnswer('name', 'why do you need that?')).toBeNull();
  });

  it('keeps a text or case-type answer trimmed, and null when blank', () => {
    expect(readAnswer('text', '  I was rear-ended.  ')).toBe('I was rear-ended.');
    expect(readAnswer('case_type', 'car accident')).toBe('car accident');
    expect(readAnswer('text', '   ')).toBeNull();
    expect(readAnswer('case_type', '')).toBeNull();
  });
});
