// Preloaded (node --import) into the web and worker processes of `npm run bench -- --only=intake-cost`
// when BENCH_COST_ORIGINS=1: counts each MongoDB collection method the service calls, and each
// Redis command its ioredis clients send (BullMQ's included), by where in its code (or in
// BullMQ's classes) the call was made, so the bench can print a call's commands by origin (what
// the command counters and PostgreSQL's row counters cannot say). Bench-only: never loaded by the
// service itself. Each call costs a stack capture (tens of µs), so a run with it measures where
// the commands come from, not their CPU.
//
// On SIGUSR2 the process writes its counts so far, synchronously, to
// $BENCH_ORIGINS_DIR/<pid>-<n>.json (n counts the signals); the bench diffs two such snapshots.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import mongodb from 'mongodb';
import ioredis from 'ioredis';

const dir = process.env.BENCH_ORIGINS_DIR;
if (dir === undefined || dir === '') throw new Error('command-origins: BENCH_ORIGINS_DIR is required');

/** The methods that send one command each (findOne is a find; insertMany one insert). */
const METHODS = [
  'find',
  'findOne',
  'insertOne',
  'insertMany',
  'updateOne',
  'updateMany',
  'replaceOne',
  'deleteOne',
  'deleteMany',
  'findOneAndUpdate',
  'findOneAndReplace',
  'findOneAndDelete',
  'bulkWrite',
  'countDocuments',
  'aggregate',
];
/** The service's own code, as the compiled (dist/) or TypeScript files name it. */
const APP_FRAME = /\/(?:dist\/)?(api|core|jobs|workers)\/[^:]+/;
/** BullMQ's classes, for the commands it sends of its own accord (a job's fetch, its completion). */
const BULLMQ_FRAME = /\/bullmq\/dist\/cjs\/classes\/[^:]+/;
/** Helpers every caller goes through: the origin is the first frame past them. */
const GENERIC =
  /\/core\/(platform\/(db\/(claim|collections|mongo|read-cache)|redis-script|redis-mutex)|wiring\/services|domain\/(calls\/call|leads\/lead)-lock)\./;

const counts = new Map();
let inside = 0;

/** `fn (core/…/file)` for the first two of the service's frames past the generic helpers. */
function origin(stack, withBullmq = false) {
  const frames = [];
  for (const line of stack.split('\n').slice(2)) {
    const file = APP_FRAME.exec(line) ?? (withBullmq ? BULLMQ_FRAME.exec(line) : null);
    if (file === null || GENERIC.test(line)) continue;
    const fn = /at (?:async )?([^\s(]+) \(/.exec(line)?.[1] ?? '(anonymous)';
    frames.push(
      `${fn} (${file[0]
        .slice(1)
        .replace(/^dist\//, '')
        .replace(/^bullmq\/dist\/cjs\//, 'bullmq/')
        .replace(/\.js$/, '')})`,
    );
    if (frames.length === 2) break;
  }
  return frames.length === 0 ? '(outside the service)' : frames.join(' < ');
}

const proto = mongodb.Collection.prototype;
for (const method of METHODS) {
  const original = proto[method];
  if (typeof original !== 'function') continue;
  proto[method] = function counted(...args) {
    // A method the driver implements through another (findOne through find) counts once.
    if (inside === 0) {
      const key = `${method}\t${this.collectionName}\t${origin(new Error().stack ?? '')}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    inside += 1;
    try {
      return original.apply(this, args);
    } finally {
      inside -= 1;
    }
  };
}

// Redis: every command an ioredis client sends, by name; a command sent as part of a pipeline or
// MULTI (ioredis passes the pipeline's stream) is marked so, since its write is shared.
const redisProto = ioredis.prototype;
const sendCommand = redisProto.sendCommand;
redisProto.sendCommand = function counted(command, stream, ...rest) {
  const name = `redis.${String(command?.name ?? '?').toLowerCase()}${stream === undefined ? '' : ' (pipelined)'}`;
  const key = `${name}\t-\t${origin(new Error().stack ?? '', true)}`;
  counts.set(key, (counts.get(key) ?? 0) + 1);
  return sendCommand.call(this, command, stream, ...rest);
};

let snapshots = 0;
process.on('SIGUSR2', () => {
  snapshots += 1;
  writeFileSync(join(dir, `${process.pid}-${snapshots}.json`), JSON.stringify(Object.fromEntries(counts)));
});
