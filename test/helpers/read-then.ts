import type { Collection, Db, Document, Filter } from 'mongodb';

// Two reads of one reader with another process's writes landing between them, made to happen
// every time instead of now and then: the reader gets `db` itself (the real store, every call
// passed through), except that its first findOne of the document `id` in `collectionName` runs
// `between` once that read has answered, before the reader goes on.

/** `db`, with `between` run right after the first findOne of `{_id: id}` in `collectionName`. */
export function readThen(db: Db, collectionName: string, id: string, between: () => Promise<void>): Db {
  let ran = false;
  const watch = <T extends Document>(real: Collection<T>): Collection<T> =>
    new Proxy(real, {
      get(target, prop, receiver) {
        if (prop !== 'findOne') return Reflect.get(target, prop, receiver) as unknown;
        return async (filter: Filter<T>, ...rest: unknown[]) => {
          const found = await (target.findOne as (...args: unknown[]) => Promise<unknown>)(filter, ...rest);
          if (!ran && (filter as { _id?: unknown })._id === id) {
            ran = true;
            await between();
          }
          return found;
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
