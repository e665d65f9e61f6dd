import type { Collection, Db } from 'mongodb';

// Interleavings with the real store made to happen every time instead of now and then: the code
// under test gets `db` itself (every command goes to the real driver, as it was made), except
// that chosen methods of one collection wait for, or run, a test's step around the real call.
// They fake nothing: the answers are the store's.

type Method = (...args: unknown[]) => Promise<unknown>;
/** Given the real method (bound to its collection), what the code under test calls instead. */
type Around = (real: Method) => Method;

/** `db`, with the methods named in `around` of `collectionName` wrapped. */
export function aroundCalls(
  db: Db,
  collectionName: string,
  around: Partial<Record<keyof Collection, Around>>,
): Db {
  const watch = (real: Collection): Collection =>
    new Proxy(real, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        const wrap = around[prop as keyof Collection];
        if (wrap === undefined || typeof value !== 'function') return value;
        return wrap((...args: unknown[]) => (value as Method).apply(target, args));
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

/**
 * A fault at one chosen moment of a writer's work: its first call of `method` on
 * `collectionName` waits for `before` (a test ends the store's connections there, say).
 */
export function beforeCall(
  db: Db,
  collectionName: string,
  method: keyof Collection,
  before: () => Promise<void>,
): Db {
  let ran = false;
  return aroundCalls(db, collectionName, {
    [method]:
      (real: Method) =>
      async (...args: unknown[]) => {
        if (!ran) {
          ran = true;
          await before();
        }
        return real(...args);
      },
  });
}

/**
 * Two reads of one reader with another process's writes landing between them: `between` runs
 * right after the first findOne of `{_id: id}` in `collectionName` has answered, before the
 * reader goes on.
 */
export function readThen(db: Db, collectionName: string, id: string, between: () => Promise<void>): Db {
  let ran = false;
  return aroundCalls(db, collectionName, {
    findOne:
      (real) =>
      async (filter, ...rest) => {
        const found = await real(filter, ...rest);
        if (!ran && (filter as { _id?: unknown } | undefined)?._id === id) {
          ran = true;
          await between();
        }
        return found;
      },
  });
}

/**
 * Writers of one document meeting in the store: the first `method` calls on `collectionName` for
 * one `{_id}` wait until `parties` of them have been made, then all go to the store at once; later
 * calls for it (a write made again) go straight on.
 */
export function writesMeet(db: Db, collectionName: string, method: keyof Collection, parties = 2): Db {
  const waiting = new Map<unknown, Array<() => void>>();
  const met = new Set<unknown>();
  return aroundCalls(db, collectionName, {
    [method]:
      (real: Method) =>
      async (...args: unknown[]) => {
        const id = (args[0] as { _id?: unknown } | undefined)?._id;
        if (!met.has(id)) {
          const arrived = waiting.get(id) ?? [];
          waiting.set(id, arrived);
          if (arrived.length + 1 < parties) await new Promise<void>((go) => arrived.push(go));
          else {
            met.add(id);
            waiting.delete(id);
            for (const go of arrived) go();
          }
        }
        return real(...args);
      },
  });
}
