import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { RedisClient } from './redis.js';

// The one way the service runs Lua in Redis. Each script is its own .lua file beside the module
// that runs it, read once when that module loads (from the sources under vitest and tsx, from
// dist/ once built: `npm run build` copies the .lua files there). A run is EVALSHA; the text is
// sent (EVAL) only when the server does not know the script yet (NOSCRIPT: a restart, a
// failover, SCRIPT FLUSH), and Redis caches it again from then on.
//
// Why our own function rather than ioredis `defineCommand` (which does the same EVALSHA/EVAL
// dance): a script here is a value, not a method patched onto each connection, so it runs on any
// connection without registration and without declaring its type into ioredis's interfaces; and
// its keys and arguments are passed by name, checked against the names its file declares:
//
//   --! KEYS: slots waiters firms
//   --! ARGV: member now lease_end ...rest
//
// (`...rest`: any number of further arguments follow the named ones.) A script whose file and
// caller disagree fails when its module loads, not on its first run in production. Every key a
// script touches is passed in KEYS (built by core/platform/redis-keys.ts), never built in Lua.

type Arg = string | number;

export interface RedisScript<K extends string, A extends string> {
  /** Runs the script: `keys` and `args` by the names its file declares, then `rest` (if it takes any). */
  run(
    redis: RedisClient,
    keys: Record<K, string>,
    args: Record<A, Arg>,
    rest?: readonly Arg[],
  ): Promise<unknown>;
}

interface ScriptInterface<K extends readonly string[], A extends readonly string[]> {
  keys: K;
  args: A;
  /** Lua files whose functions the script uses, put before it (Redis has no `require`). */
  include?: URL[];
}

/** The names a script file declares on its `--! NAME:` line ([] when it has none). */
function declared(source: string, name: 'KEYS' | 'ARGV', file: URL): string[] {
  const line = source.split('\n').find((l) => l.startsWith(`--! ${name}:`));
  if (line === undefined) throw new Error(`${file.pathname}: no "--! ${name}:" line`);
  return line
    .slice(`--! ${name}:`.length)
    .trim()
    .split(/\s+/)
    .filter((n) => n !== '');
}

function checkNames(
  file: URL,
  what: 'KEYS' | 'ARGV',
  inFile: string[],
  inCaller: readonly string[],
): boolean {
  const variadic = inFile.at(-1)?.startsWith('...') === true;
  const named = variadic ? inFile.slice(0, -1) : inFile;
  if (named.join(' ') !== inCaller.join(' ')) {
    throw new Error(
      `${file.pathname} declares ${what} ${inFile.join(' ')}; its caller passes ${inCaller.join(' ')}`,
    );
  }
  return variadic;
}

/** Reads the script at `file` and checks its declared KEYS and ARGV against `names`. */
export function loadRedisScript<const K extends readonly string[], const A extends readonly string[]>(
  file: URL,
  names: ScriptInterface<K, A>,
): RedisScript<K[number], A[number]> {
  const own = readFileSync(file, 'utf8');
  checkNames(file, 'KEYS', declared(own, 'KEYS', file), names.keys);
  const variadic = checkNames(file, 'ARGV', declared(own, 'ARGV', file), names.args);
  const source = [...(names.include ?? []).map((f) => readFileSync(f, 'utf8')), own].join('\n');
  const sha = createHash('sha1').update(source).digest('hex');
  return {
    async run(redis, keys, args, rest = []) {
      if (rest.length > 0 && !variadic) throw new Error(`${file.pathname} takes no further arguments`);
      const keyList = names.keys.map((k) => keys[k as K[number]]);
      const argList = [...names.args.map((a) => args[a as A[number]]), ...rest];
      try {
        return await redis.evalsha(sha, keyList.length, ...keyList, ...argList);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
        return redis.eval(source, keyList.length, ...keyList, ...argList);
      }
    },
  };
}
