import { MetricsTime, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Services } from '../core/wiring/services.js';
import { ConfigError } from '../core/platform/config.js';
import { createRedis, redisSettings } from '../core/platform/redis.js';
import { redisKeys } from '../core/platform/redis-keys.js';
import type { Attempt } from '../core/platform/db/effect-records.js';
import type { PayloadOf } from '../jobs/define.js';
import { QUEUE_NAMES, QUEUE_SETTINGS, type QueueName } from '../jobs/queues.js';
import { JOBS, type JobKey } from '../jobs/table.js';
import { backoffStrategy } from '../jobs/backoff.js';
import { startOutboxDrain } from '../core/domain/deliveries/delivery-outbox.js';
import { annotateSpan, queueTelemetry, tracingActive } from '../core/platform/telemetry/start.js';
import { spanSubjectOf } from '../jobs/span-subject.js';
import { EffectGate } from '../core/platform/db/effect-gate.js';
import { enableReadCache, observeChangeEpoch } from '../core/platform/db/read-cache.js';
import { byTime, stopSchedule } from './stop-schedule.js';
import { maskPersonal } from '../core/platform/telemetry/scrub.js';
import { BusyUntilError } from '../core/platform/busy-until.js';
import { park } from './park.js';
import { keepJobSchedules } from './job-schedules.js';

interface ProcessorContext {
  services: Services;
  /** The BullMQ worker running this job (for rate limiting the whole queue). */
  worker: Worker;
  token: string | undefined;
  /** Whether this is the job's last attempt (effects failing now are recorded `failed`). */
  attempt: Attempt;
}

/** One job's processor: thin, it loads state, calls core/, records the outcome. */
export type JobProcessor<T> = (job: Job<T>, ctx: ProcessorContext) => Promise<unknown>;

/** A processor for every job of the job table: the compiler refuses a job without one. */
export type ProcessorTable = { [K in JobKey]: JobProcessor<PayloadOf<(typeof JOBS)[K]>> };

export interface Workers {
  /**
   * Stop taking jobs; let active ones finish, then hand the rest back, all before `deadline`
   * (ms since epoch; default SHUTDOWN_TIMEOUT_MS from now): see stop-schedule.ts.
   */
  stop(deadline?: number): Promise<void>;
}

/** The queues named by WORKER_QUEUES (every queue when unset); a name we do not have stops the process. */
export function selectQueues(names: string[] | undefined): QueueName[] {
  if (names === undefined) return QUEUE_NAMES;
  const unknown = names.filter((n) => !(QUEUE_NAMES as string[]).includes(n));
  if (unknown.length > 0) {
    throw new ConfigError([
      `WORKER_QUEUES names unknown queues (${unknown.join(', ')}); the queues are ${QUEUE_NAMES.join(', ')}`,
    ]);
  }
  return names as QueueName[];
}

/**
 * How many times a job may be taken back from a worker that stopped renewing its lock (it died,
 * or lost Redis for longer than JOB_LOCK_MS) before BullMQ gives it up for good. Every job here
 * is idempotent, so a stall costs only a re-run; the limit is there for a job that kills its
 * worker each time. It was 2: in the chaos run one call_analyzed effect was taken from two
 * SIGKILLed workers and then stalled across a Redis restart, and its Clio matter was never made.
 */
export const MAX_STALLS = 10;

const isLastAttempt = (job: Job): boolean => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/** A job this process is running: its gate to the outside world, and when its processor ended. */
interface InFlight {
  key: string;
  job: Job;
  token: string | undefined;
  gate: EffectGate;
  ended: Promise<void>;
}

/** One BullMQ Worker per queue consumed by this process (WORKER_QUEUES), dispatching on job name. */
export function startWorkers(
  services: Services,
  processors: ProcessorTable,
  queues: QueueName[] = selectQueues(services.config.workerQueues),
): Workers {
  const inFlight = new Map<string, InFlight>();
  const byName = new Map<string, JobProcessor<unknown>>(
    (Object.keys(JOBS) as JobKey[]).map((key) => [JOBS[key].name, processors[key] as JobProcessor<unknown>]),
  );
  // Firms, agents and keys are read through the read cache: each job reads the change epoch
  // before it runs, so a change made before it started is seen (core/platform/db/read-cache.ts).
  const db = services.mongo.db;
  enableReadCache(db);
  const workers = queues.map((queue) => {
    // Each worker gets its own connection; BullMQ duplicates it for blocking commands.
    const connection = createRedis(redisSettings(services.config), 'worker');
    const settings = QUEUE_SETTINGS[queue];
    const worker: Worker = new Worker(
      queue,
      async (job, token) => {
        const process = byName.get(job.name);
        if (process === undefined) throw new UnrecoverableError(`No processor for job "${job.name}"`);
        const key = `${queue}/${job.id}`;
        if (tracingActive()) annotateSpan(spanSubjectOf(job.data));
        const gate = new EffectGate();
        let end!: () => void;
        const ended = new Promise<void>((resolve) => (end = resolve));
        inFlight.set(key, { key, job, token, gate, ended });
        try {
          await observeChangeEpoch(db);
          return await process(job, {
            services,
            worker,
            token,
            attempt: { lastAttempt: isLastAttempt(job), gate },
          });
        } catch (err) {
          // Not yet (another attempt's live lease, an event still to be applied): the job sleeps
          // until then, delayed, spending no attempt (core/platform/busy-until.ts).
          if (err instanceof BusyUntilError) return await park(job, token, err.until + 250, services.log);
          throw err;
        } finally {
          inFlight.delete(key);
          end();
        }
      },
      {
        connection,
        prefix: redisKeys(services.config).queuePrefix(queue),
        concurrency: settings.concurrency ?? services.config.workerConcurrency,
        metrics: { maxDataPoints: MetricsTime.ONE_WEEK },
        lockDuration: services.config.jobLockMs,
        stalledInterval: services.config.jobLockMs,
        maxStalledCount: MAX_STALLS,
        ...(settings.limiter === undefined ? {} : { limiter: settings.limiter }),
        // The custom backoff type of jobs/backoff.ts (CAPPED): the retries after an own outage.
        settings: { backoffStrategy },
        autorun: true,
        ...queueTelemetry(),
      },
    );
    worker.on('failed', (job, err) => {
      services.log.warn(
        // Masked as spans are: an id or an SMTP refusal may name a person (core/platform/telemetry/scrub.ts).
        {
          queue,
          jobId: job?.id === undefined ? undefined : maskPersonal(job.id),
          attempts: job?.attemptsMade,
          err: maskPersonal(err.message),
        },
        'job failed',
      );
    });
    worker.on('error', (err) => services.log.error({ queue, err }, 'worker error'));
    return { worker, connection };
  });

  // Each scheduler's next run is looked at from here on: a failover can lose it (job-schedules.ts).
  const schedules = keepJobSchedules(services, queues);

  // Webhook deliveries kept in MongoDB while Redis was down go to their queues from here.
  const drain = startOutboxDrain(services);

  return {
    async stop(deadline = Date.now() + services.config.shutdownTimeoutMs) {
      const at = stopSchedule(deadline, services.config.shutdownTimeoutMs);
      schedules.stop();
      // From the signal on: the drain ends after the entry it is moving, and close() stops
      // fetching at once and resolves when the active jobs have finished.
      const drained = drain.stop();
      const graceful = Promise.all(workers.map((w) => w.worker.close())).then(() => true);
      if (!(await byTime(graceful, at.graceEnd, false))) {
        // No effect begins from now on: a job about to begin one is parked where it stands. An
        // effect under way may finish its request and record it, so that the next worker finds
        // it done rather than sending it again.
        const running = [...inFlight.values()];
        for (const { gate } of running) gate.close();
        services.log.warn(
          {
            jobs: running.length,
            effectsUnderWay: running.filter((r) => r.gate.busy).map((r) => r.key),
          },
          'stop: grace over',
        );
        // Each job ends (its effects under way recorded, its last writes made, its locks let go
        // of) or parks with nothing under way; whatever is still running by the hand-back time
        // is handed back as it stands.
        const settled = Promise.all(running.map((r) => Promise.race([r.ended, r.gate.stopped()])));
        await byTime(Promise.race([graceful, settled]), at.handBack, false);
        if (inFlight.size > 0) {
          // Hand unfinished jobs back to the wait list (their locks released) so another worker
          // takes them now rather than after their locks lapse; their effects are idempotent by
          // design (a dial is marked first, and a retry asks the provider before dialling). The
          // pending close() is left behind: once a graceful close has begun, BullMQ's
          // close(true) only awaits it, so the process exits instead of waiting for jobs it no
          // longer owns.
          const left = [...inFlight.values()];
          services.log.warn(
            {
              jobs: left.map((r) => r.key),
              effectsUnderWay: left.filter((r) => r.gate.busy).length,
            },
            'handing back unfinished jobs',
          );
          await byTime(
            Promise.allSettled(left.map(({ job, token }) => job.moveToWait(token))),
            at.closeBy,
            undefined,
          );
        }
      }
      // The drain has given up its lock by now unless Redis hangs; either way nothing waits on it.
      await byTime(drained, at.closeBy, undefined);
      for (const w of workers) w.connection.disconnect();
      if (
        (await byTime(
          services.close().then(() => true),
          at.closeBy,
          false,
        )) === false
      ) {
        services.log.warn('stop: connections not closed in time; exiting with the work handed back');
      }
    },
  };
}
