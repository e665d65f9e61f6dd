// Dynamic variables (core/domain/agents/dynamic-variables.ts): requests send strings, numbers or
// booleans; calls and chats store them, and send them to providers, as strings.
import { describe, expect, it } from 'vitest';
import { stringifyVariables } from '../../core/domain/agents/dynamic-variables.js';

describe('stringifyVariables', () => {
  it('writes every value as a string, false and 0 included', () => {
    expect(
      stringifyVariables({ name: 'Jane', age: 42, vip: true, debt: 0, minor: false, rate: 1.5 }),
    ).toEqual({
      name: 'Jane',
      age: '42',
      vip: 'true',
      debt: '0',
      minor: 'false',
      rate: '1.5',
    });
  });

  it('gives an empty object for no variables', () => {
    expect(stringifyVariables(undefined)).toEqual({});
    expect(stringifyVariables({})).toEqual({});
  });

  it('keeps keys named like Object.prototype members as own keys, and adds none', () => {
    const input = JSON.parse('{"__proto__": "p", "constructor": 1}') as Record<string, string | number>;
    const out = stringifyVariables(input);
    expect(Object.keys(out)).toEqual(['__proto__', 'constructor']);
    expect(Object.hasOwn(out, '__proto__') && out['__proto__']).toBe('p');
    expect(out.constructor).toBe('1');
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});
