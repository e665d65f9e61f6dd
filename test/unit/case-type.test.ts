// The practice area a matter is about and how urgent it sounds, from keywords
// (core/domain/intake/case-type.ts).
import { describe, expect, it } from 'vitest';
import { classifyCaseType, classifyUrgency, urgencyValue } from '../../core/domain/intake/case-type.js';

describe('classifyUrgency and classifyCaseType', () => {
  it.each([
    ['My son was arrested last night', 'urgent'],
    ['I have a court date tomorrow morning', 'urgent'],
    ['This is an emergency', 'urgent'],
    ['There is a filing deadline next month', 'high'],
    ['I was served with papers', 'high'],
    ['I slipped at the grocery store', 'normal'],
    ['No rush, just curious about my options', 'low'],
    ["It's not an emergency", 'low'],
  ])('%j is %s', (text, urgency) => {
    expect(classifyUrgency(text)).toBe(urgency);
  });

  it.each([
    ['I was rear-ended, a car accident', 'Personal Injury'],
    ['my husband wants a divorce', 'Family Law'],
    ['I got fired after I complained', 'Employment'],
    ['arrested for DUI', 'Criminal Defense'],
    ['my landlord wants to evict me', 'Landlord-Tenant'],
    ['I hurt my back at work', null],
    ['I was injured at work', 'Workers Compensation'],
  ])('%j is %s', (text, caseType) => {
    expect(classifyCaseType(text)).toBe(caseType);
  });

  it.each([
    ['', 'normal'],
    ['a hearing next week', 'high'],
    ['not urgent, but I was arrested', 'urgent'],
    ['no emergency', 'low'],
    ['nothing urgent, but there is a deadline', 'high'],
  ])('%j is %s (negations lower, but never hide a stronger word)', (text, urgency) => {
    expect(classifyUrgency(text)).toBe(urgency);
  });

  it.each([
    ['I need a green card', 'Immigration'],
    ['my father left a will', 'Estate Planning'],
    ['I want to file for bankruptcy', 'Bankruptcy'],
    ['the surgeon made a surgical error', 'Medical Malpractice'],
    // The first practice area in the list wins.
    ['a workers comp claim after a car accident', 'Workers Compensation'],
    ['', null],
    ['hello', null],
    ['I will call back', null],
  ])('%j is %s', (text, caseType) => {
    expect(classifyCaseType(text)).toBe(caseType);
  });
});

describe('urgencyValue (an urgency as a person or a model wrote it)', () => {
  it.each([
    [' HIGH ', 'high'],
    ['low', 'low'],
    ['urgent', 'urgent'],
    ['medium', 'normal'],
    ['moderate', 'normal'],
    ['Critical', 'urgent'],
    ['emergency', 'urgent'],
    ['immediate', 'urgent'],
  ])('reads %j as %s', (text, urgency) => {
    expect(urgencyValue(text)).toBe(urgency);
  });

  it.each(['soon', '', 'very high', '__proto__'])('is null for %j', (text) => {
    expect(urgencyValue(text)).toBeNull();
  });
});
