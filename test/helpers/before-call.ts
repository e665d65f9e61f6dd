import type { Collection, Db } from 'mongodb';

// A fault landing at one chosen moment of a writer's work instead of now and then: the writer gets
// `db` itself (the real store, every call passed through), except that its first call of `method`
// on `collectionName` waits for `before` (a test ends the store's connections there, say), then
// goes to the real driver as it was made.

/** `db`, with `before` awaited right before the first call of `method` on `collectionName`. */
export function beforeCall(
  db: Db,
  collectionName: string,
  method: keyof Collection,
  before: () => Promise<void>,
): Db {
  let ran = false;
  const watch = (real: Collection): Collection =>
    new Proxy(real, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== method || typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          if (!ran) {
            ran = true;
            await before();
          }
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
  return new Proxy(db, {
    get(target, prop, receiver) {
      if (prop !== 'collection') return Reflect.get(target, prop, receiver) as unknown;
      return (name: string, ...rest: unknown[]) => {
        const real = (target.collection as (...args: unknown[]) => Collection)(name, ...rest);
        return name === collectionName ? watch(real) : real;
      };
    },
  });
}
