// What jobs hold in Redis, measured on their own keys. The server's used_memory is shared by the
// test files running beside one (each with its own prefix on the same Redis), so a bound on its
// growth fails when they move it; MEMORY USAGE of a job's hash is that job's alone.
import type { Job } from 'bullmq';
import type { QueueName } from '../../jobs/queues.js';
import type { Stack } from './stack.js';

/** The whole server's used_memory, bytes: for a log line, not for a bound. */
export async function redisUsedMemory(stack: Stack): Promise<number> {
  const info = await stack.services.redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)![1]);
}

/** Bytes the jobs' hashes hold in Redis (MEMORY USAGE, every field sampled). */
export async function jobsHeldBytes(
  stack: Stack,
  queue: QueueName,
  jobs: ReadonlyArray<Job>,
): Promise<number> {
  const q = stack.services.queues[queue];
  let held = 0;
  for (const job of jobs) {
    held += Number(await stack.services.redis.call('MEMORY', 'USAGE', q.toKey(job.id!), 'SAMPLES', '0'));
  }
  return held;
}
