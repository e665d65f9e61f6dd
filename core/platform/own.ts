/**
 * record[key] when key is the record's own property, else undefined. For keys that come from
 * requests or providers (intake question keys, variable names): "constructor", "toString" or
 * "__proto__" must never find Object.prototype's members.
 */
export function own<T>(record: Readonly<Record<string, T>> | null | undefined, key: string): T | undefined {
  return record != null && Object.hasOwn(record, key) ? record[key] : undefined;
}
