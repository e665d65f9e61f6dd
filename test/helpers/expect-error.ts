import { expect } from 'vitest';
import type { ApiResponse } from './client.js';

/**
 * The error body (docs/errors.md#the-error-body), exactly: {"error": {code, message, details?}} as JSON,
 * with details (when present) a list of {path: JSON pointer, message}, and no stack trace.
 * Returns the details (or []) for further checks.
 */
export function expectError(
  res: ApiResponse,
  status: number,
  code: string | RegExp,
): Array<{ path: string; message: string }> {
  expect({ status: res.status, body: res.body }).toMatchObject({ status });
  expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  expect(Object.keys(res.body)).toEqual(['error']);
  const error = res.body.error as Record<string, unknown>;
  expect(Object.keys(error).sort()).toEqual(
    'details' in error ? ['code', 'details', 'message'] : ['code', 'message'],
  );
  if (typeof code === 'string') expect(error.code).toBe(code);
  else expect(error.code).toMatch(code);
  expect(error.code).toMatch(/^[a-z]+(?:_[a-z]+)*$/);
  expect(typeof error.message).toBe('string');
  expect((error.message as string).length).toBeGreaterThan(0);
  // No stack frames or file paths ever reach a client.
  expect(res.text).not.toMatch(/\n\s+at |\.ts:\d+|node_modules/);
  if (!('details' in error)) return [];
  const details = error.details as Array<Record<string, unknown>>;
  expect(Array.isArray(details)).toBe(true);
  expect(details.length).toBeGreaterThan(0);
  for (const detail of details) {
    expect(Object.keys(detail).sort()).toEqual(['message', 'path']);
    expect(detail.path).toMatch(/^\//);
    expect(typeof detail.message).toBe('string');
  }
  return details as Array<{ path: string; message: string }>;
}

/** The JSON pointers named in an error's details. */
export function detailPaths(res: ApiResponse): string[] {
  return ((res.body?.error?.details ?? []) as Array<{ path: string }>).map((d) => d.path);
}
