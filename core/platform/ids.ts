import { randomBytes } from 'node:crypto';

/** A sortable-enough, URL-safe identifier with a type prefix, e.g. `call_3Jx...`. */
export function newId(prefix: string, bytes = 15): string {
  return `${prefix}_${randomBytes(bytes).toString('base64url')}`;
}
