import type { Services } from '../core/wiring/services.js';
import type { QueueName } from '../jobs/queues.js';
import { JOBS, type JobKey } from '../jobs/table.js';
import type { JobDefinition } from '../jobs/define.js';

// The job schedulers of a worker process's queues (the jobs declared with `everyMs`), kept
// running. BullMQ adds a scheduler's next run from the worker that took the current one, in a
// write of its own just after the take. A Redis failover can lose that write and keep the take
// (replication is asynchronous: the replica had the take, not what followed), and a Redis away
// for longer than the worker retries it loses it too. The scheduler then has no next run and
// never runs again: the lost-call sweep among them, and the calls it is there to take up would
// stay unfinished (docs/redis.md#what-a-failover-can-lose). So each worker
// process upserts its schedulers at start, and then looks every JOB_SCHEDULES_CHECK_MS at each
// one's next run: when that run is not pending it upserts the scheduler again, and BullMQ adds
// the next run (the upsert of a scheduler whose next run is pending leaves that run as it is).

/** A next run that will run: waiting for its time, or for a worker. */
const PENDING = new Set(['delayed', 'waiting', 'prioritized']);

type Scheduled = JobDefinition<unknown> & { everyMs: NonNullable<JobDefinition<unknown>['everyMs']> };

export interface JobSchedules {
  stop(): void;
}

/** Upserts the schedulers of `queues` now, then checks their next runs every JOB_SCHEDULES_CHECK_MS. */
export function keepJobSchedules(services: Services, queues: QueueName[]): JobSchedules {
  const scheduled = (Object.keys(JOBS) as JobKey[])
    .map((key) => JOBS[key] as JobDefinition<unknown>)
    .filter((d): d is Scheduled => d.everyMs !== undefined && queues.includes(d.queue));
  for (const definition of scheduled) void upsert(services, definition);
  // A next run seen running at one check, keyed by scheduler: the run just taken has its next
  // added within milliseconds, so one still running at the next check lost it.
  let running = new Map<string, number>();
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    void check(services, scheduled, running)
      .then((seen) => (running = seen))
      .catch((err: unknown) => services.log.warn({ err }, 'job schedules: could not check'))
      .finally(() => (checking = false));
  }, services.config.jobSchedulesCheckMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

async function upsert(services: Services, definition: Scheduled): Promise<boolean> {
  const every =
    typeof definition.everyMs === 'function' ? definition.everyMs(services.config) : definition.everyMs;
  try {
    await services.queues[definition.queue].upsertJobScheduler(
      definition.name,
      { every },
      { name: definition.name, ...(definition.options === undefined ? {} : { opts: definition.options }) },
    );
    return true;
  } catch (err) {
    services.log.error({ err, schedule: definition.name }, 'could not schedule job');
    return false;
  }
}

/** One look at every scheduler's next run; returns the next runs seen running. */
async function check(
  services: Services,
  scheduled: Scheduled[],
  runningBefore: Map<string, number>,
): Promise<Map<string, number>> {
  const running = new Map<string, number>();
  for (const definition of scheduled) {
    const queue = services.queues[definition.queue];
    const scheduler = await queue.getJobScheduler(definition.name);
    const next = scheduler?.next ?? undefined;
    const state = next === undefined ? 'gone' : await queue.getJobState(`repeat:${definition.name}:${next}`);
    if (PENDING.has(state)) continue;
    if (state === 'active' && next !== undefined && runningBefore.get(definition.name) !== next) {
      running.set(definition.name, next);
      continue;
    }
    if (await upsert(services, definition)) {
      services.log.warn(
        { schedule: definition.name, next: next === undefined ? null : new Date(next).toISOString(), state },
        'job schedules: a scheduler had no next run; added again',
      );
    }
  }
  return running;
}
