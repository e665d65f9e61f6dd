/**
 * record[key] when key is the record's own property, else undefined. For keys that come from
 * requests or providers (intake question keys, variable names): "constructor", "toString" or
 * "__proto__" must never find Object.prototype's members.
 */
export function own<T>(record: Readonly<Record<string, T>> | null | undefined, key: string): T | undefined {
  return record != null && Object.hasOwn(record, key) ? record[key] : undefined;
}

/**
 * The value at a dotted path (`event.data.case_type`), walked through own properties only;
 * undefined when any step is missing.
 */
export function valueAt(root: unknown, path: string): unknown {
  let value: unknown = root;
  for (const key of path.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    if (!Object.prototype.hasOwnProperty.call(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
