import { valueAt } from '../../platform/own.js';
import { conditionsOf, matchModeOf, type Condition } from './vocabulary.js';

// What a node reads: values by dotted path from the run's context ({event, lead, firm}), the
// structured conditions of triggers and condition nodes, and `{{path}}` templates. No code is
// ever evaluated: a path is split on dots and walked through own properties only.

export type Context = Record<string, unknown>;

const comparable = (v: unknown): string | number | null =>
  typeof v === 'number'
    ? v
    : typeof v === 'string'
      ? v.toLowerCase()
      : typeof v === 'boolean'
        ? String(v)
        : null;

function equal(a: unknown, b: unknown): boolean {
  const x = comparable(a);
  const y = comparable(b);
  if (x === null || y === null) return a === b;
  if (typeof x === 'number' && typeof y === 'string') return String(x) === y;
  if (typeof x === 'string' && typeof y === 'number') return x === String(y);
  return x === y;
}

function order(a: unknown, b: unknown): number | null {
  const x = typeof a === 'string' && a.trim() !== '' && !Number.isNaN(Number(a)) ? Number(a) : a;
  const y = typeof b === 'string' && b.trim() !== '' && !Number.isNaN(Number(b)) ? Number(b) : b;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  if (typeof x === 'string' && typeof y === 'string') return x < y ? -1 : x > y ? 1 : 0;
  return null;
}

/** One condition against a context. Strings compare case-insensitively. */
export function holds(c: Condition, root: unknown): boolean {
  const v = valueAt(root, c.field);
  switch (c.operator) {
    case 'exists':
      return v !== undefined && v !== null && v !== '';
    case 'not_exists':
      return v === undefined || v === null || v === '';
    case 'equals':
      return equal(v, c.value);
    case 'not_equals':
      return !equal(v, c.value);
    case 'contains':
    case 'not_contains': {
      const found = Array.isArray(v)
        ? v.some((item) => equal(item, c.value))
        : typeof v === 'string' &&
          typeof c.value === 'string' &&
          v.toLowerCase().includes(c.value.toLowerCase());
      return c.operator === 'contains' ? found : !found;
    }
    case 'in':
    case 'not_in': {
      const found = Array.isArray(c.value) && c.value.some((item) => equal(v, item));
      return c.operator === 'in' ? found : !found;
    }
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const o = order(v, c.value);
      if (o === null) return false;
      return c.operator === 'gt'
        ? o > 0
        : c.operator === 'gte'
          ? o >= 0
          : c.operator === 'lt'
            ? o < 0
            : o <= 0;
    }
  }
}

/** A trigger's filter (paths from the event's data) or a condition node (paths from the context). */
export function conditionsHold(
  data: Record<string, unknown>,
  key: 'filter' | 'self',
  root: unknown,
): boolean {
  const list = conditionsOf(data, key) as Condition[];
  if (list.length === 0) return true;
  return matchModeOf(data, key) === 'any'
    ? list.some((c) => holds(c, root))
    : list.every((c) => holds(c, root));
}

const TEMPLATE = /\{\{\s*([A-Za-z0-9_.]+)\s*\}\}/g;

/**
 * `{{event.data.name}}` replaced by its value (text; objects as JSON; missing: empty). `escape`,
 * when given, is applied to each value inserted, not to the template's own text: a lead's name
 * or a caller's words cannot become markup of the medium (a Slack mention), the firm's can.
 */
export function render(template: unknown, root: unknown, escape?: (text: string) => string): string {
  if (typeof template !== 'string') return '';
  return template.replace(TEMPLATE, (_, path: string) => {
    const v = valueAt(root, path);
    if (v === undefined || v === null) return '';
    const text = typeof v === 'object' ? JSON.stringify(v) : String(v);
    return escape === undefined ? text : escape(text);
  });
}
