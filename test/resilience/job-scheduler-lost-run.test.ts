// A job scheduler whose next run was lost runs again. BullMQ adds a scheduler's next run from the
// worker that took the current one, in a write of its own after the take; a Redis failover can
// keep the take and lose that write (replication is asynchronous), and the scheduler then never
// runs again: the lost-call sweep among them, and the calls it takes up would stay unfinished.
// Here Redis is put in that state by hand (the scheduler's mark back on the run taken, its next
// run gone), as the promoted replica would hold it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Queue } from 'bullmq';
import { JOBS } from '../../jobs/table.js';
import { eventually } from '../helpers/eventually.js';
import { startStack, type Stack } from '../helpers/stack.js';

const EVERY_MS = 1000;
const REAP = JOBS.reapDialSlots.name;
const PRUNE = JOBS.pruneIdempotencyKeys.name;

// The state a failover leaves: the scheduler's mark (its score) on the run taken, not on the next
// one, and the next run's job gone. Only while the next run is still delayed (not being taken).
const LOSE_NEXT_RUN = `
local next = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not next then return false end
local id = 'repeat:' .. ARGV[1] .. ':' .. next
if not redis.call('ZSCORE', KEYS[2], id) then return false end
redis.call('ZREM', KEYS[2], id)
redis.call('DEL', ARGV[2] .. id)
redis.call('ZADD', KEYS[1], tonumber(next) - tonumber(ARGV[3]), ARGV[1])
return next
`;

let stack: Stack;
let queue: Queue;
beforeAll(async () => {
  stack = await startStack({
    workers: true,
    env: { DIAL_SLOT_REAP_MS: String(EVERY_MS), JOB_SCHEDULES_CHECK_MS: '1000' },
  });
  queue = stack.services.queues[JOBS.reapDialSlots.queue];
});
afterAll(async () => stack?.stop());

const runsOf = async (name: string, states: Parameters<Queue['getJobs']>[0]) =>
  (await queue.getJobs(states, 0, 200)).filter((job) => job.name === name);
const millisOf = (id: string | undefined): number => Number(id?.split(':').at(-1));

describe('a job scheduler whose next run was lost', () => {
  it('runs again: the worker adds the next run, one only', async () => {
    // The scheduler has run once at least, so the run before its next one is there to point at.
    await eventually(async () => expect((await runsOf(REAP, ['completed'])).length).toBeGreaterThan(0));
    let lost: number | undefined;
    await eventually(async () => {
      const answer = (await stack.services.redis.eval(
        LOSE_NEXT_RUN,
        2,
        queue.keys.repeat!,
        queue.keys.delayed!,
        REAP,
        queue.toKey(''),
        String(EVERY_MS),
      )) as string | null;
      expect(answer).not.toBeNull();
      lost = Number(answer);
    });

    // A run later than the one lost completes: the schedule goes on.
    await eventually(
      async () => {
        const later = (await runsOf(REAP, ['completed'])).filter((job) => millisOf(job.id) > lost!);
        expect(later.length).toBeGreaterThan(0);
      },
      20_000,
      100,
    );
    // One next run pending, not one per check or per worker.
    await eventually(async () =>
      expect(await runsOf(REAP, ['delayed', 'waiting', 'prioritized'])).toHaveLength(1),
    );
  });

  it('leaves a pending next run as it is (not removed and added again at every check)', async () => {
    const pending = async () => (await runsOf(PRUNE, ['delayed'])).map((j) => `${j.id}@${j.timestamp}`);
    await eventually(async () => expect(await pending()).toHaveLength(1));
    const before = await pending();
    // Three checks of JOB_SCHEDULES_CHECK_MS.
    await new Promise((resolve) => setTimeout(resolve, 3500));
    expect(await pending()).toEqual(before);
  });
});
