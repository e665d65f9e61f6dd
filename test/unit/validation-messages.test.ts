// What a 400's details say (api/validation.ts): each bad field by JSON pointer, with a message a
// person can act on.
import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { compileValidator } from '../../api/validation.js';
import { AppError } from '../../core/platform/errors.js';

const detailsOf = (validate: (value: unknown) => unknown, value: unknown) => {
  try {
    validate(value);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).details;
  }
  throw new Error('expected a 400');
};

describe('validation messages', () => {
  it('a union of literals names the values it takes', () => {
    const validate = compileValidator(
      Type.Object({
        position: Type.Optional(Type.Union([Type.Literal('left'), Type.Literal('right')])),
        kind: Type.Optional(Type.String({ enum: ['a', 'b'] })),
      }),
      'query',
    );
    expect(detailsOf(validate, { position: 'top' })).toEqual([
      { path: '/position', message: 'must be one of "left", "right"' },
    ]);
    expect(detailsOf(validate, { kind: 'c' })).toEqual([
      { path: '/kind', message: 'must be one of "a", "b"' },
    ]);
  });

  it('a union with a branch of another kind keeps its own messages', () => {
    const validate = compileValidator(
      Type.Object({ when: Type.Union([Type.Literal('now'), Type.Integer({ minimum: 0 })]) }),
      'body',
    );
    const details = detailsOf(validate, { when: -1 });
    expect(details).toHaveLength(1);
    expect(details![0]!.message).not.toMatch(/one of/);
  });
});
