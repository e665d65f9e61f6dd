import { MetricsTime, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Services } from '../core/wiring/services.js';
import { ConfigError } from '../core/platform/config.js';
import { createRedis, redisSettings } from '../core/platform/redis.js';
import { redisKeys } from '../core/platform/redis-keys.js';
import type { Attempt } from '../core/platform/db/effect-recorder.js';
import type { PayloadOf } from '../jobs/define.js';
import { QUEUE_NAMES, QUEUE_SETTINGS, type QueueName } from '../jobs/queues.js';
import { JOBS, type JobKey } from '../jobs/table.js';
import { startOutboxDrain } from '../core/domain/deliveries/delivery-outbox.js';
import { annotateSpan, queueTelemetry, tracingActive } from '../core/platform/telemetry/start.js';
import { spanSubjectOf } from '../jobs/span-subject.js';
import { maskPersonal } from '../core/platform/telemetry/scrub.js';

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
  /** Stop taking jobs; let active ones finish until the deadline, then hand the rest back. */
  stop(): Promise<void>;
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

/** One BullMQ Worker per queue consumed by this process (WORKER_QUEUES), dispatching on job name. */
export function startWorkers(
  services: Services,
  processors: ProcessorTable,
  queues: QueueName[] = selectQueues(services.config.workerQueues),
): Workers {
  const inFlight = new Map<string, { job: Job; token: string | undefined }>();
  const byName = new Map<string, JobProcessor<unknown>>(
    (Object.keys(JOBS) as JobKey[]).map((key) => [JOBS[key].name, processors[key] as JobProcessor<unknown>]),
  );
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
        inFlight.set(key, { job, token });
        try {
          return await process(job, {
            services,
            worker,
            token,
            attempt: { lastAttempt: isLastAttempt(job) },
          });
        } finally {
          inFlight.delete(key);
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

  for (const definition of Object.values(JOBS)) {
    if (definition.everyMs === undefined || !queues.includes(definition.queue)) continue;
    services.queues[definition.queue]
      .upsertJobScheduler(
        definition.name,
        {
          every:
            typeof definition.everyMs === 'function'
              ? definition.everyMs(services.config)
              : definition.everyMs,
        },
        { name: definition.name, ...(definition.options === undefined ? {} : { opts: definition.options }) },
      )
      .catch((err: unknown) =>
        services.log.error({ err, schedule: definition.name }, 'could not schedule job'),
      );
  }

  // Webhook deliveries kept in MongoDB while Redis was down go to their queues from here.
  const drain = startOutboxDrain(services);

  return {
    async stop() {
      await drain.stop();
      const graceMs = Math.max(1000, services.config.shutdownTimeoutMs - 5000);
      // close() stops fetching at once and resolves when the active jobs have finished.
      const graceful = Promise.all(workers.map((w) => w.worker.close())).then(() => true);
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        graceful,
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs))),
      ]);
      clearTimeout(timer);
      if (!finished) {
        // Hand unfinished jobs back to the wait list so another worker takes them now rather
        // than after their locks lapse; their effects are idempotent by design (a dial is
        // marked first, and a retry asks the provider before dialling). The pending close()
        // is left behind: once a graceful close has begun, BullMQ's close(true) only awaits
        // it, so the process exits instead of waiting for jobs it no longer owns.
        services.log.warn({ jobs: [...inFlight.keys()] }, 'handing back unfinished jobs');
        await Promise.allSettled([...inFlight.values()].map(({ job, token }) => job.moveToWait(token)));
      }
      for (const w of workers) w.connection.disconnect();
      await services.close();
    },
  };
}
