import { MetricsTime, Worker, type Job } from 'bullmq';
import type { Services } from '../core/wiring/services.js';
import { createRedis } from '../core/platform/redis.js';
import type { QueueProcessor } from './processor.js';

export interface Workers {
  workers: Worker[];
  /** Stop taking jobs; let active ones finish until the deadline, then hand the rest back. */
  stop(): Promise<void>;
}

export function startWorkers(services: Services, processors: QueueProcessor[]): Workers {
  const inFlight = new Map<string, { job: Job; token: string | undefined }>();
  const workers = processors.map((p) => {
    // Each worker gets its own connection; BullMQ duplicates it for blocking commands.
    const connection = createRedis(services.config.redisUrl, 'worker');
    const worker: Worker = new Worker(
      p.queue,
      async (job, token) => {
        const key = `${p.queue}/${job.id}`;
        inFlight.set(key, { job, token });
        try {
          return await p.process(job, { services, worker, token });
        } finally {
          inFlight.delete(key);
        }
      },
      {
        connection,
        prefix: services.config.queuePrefix,
        concurrency: p.concurrency ?? services.config.workerConcurrency,
        metrics: { maxDataPoints: MetricsTime.ONE_WEEK },
        lockDuration: services.config.jobLockMs,
        stalledInterval: services.config.jobLockMs,
        maxStalledCount: 2,
        ...(p.limiter === undefined ? {} : { limiter: p.limiter }),
        autorun: true,
      },
    );
    worker.on('failed', (job, err) => {
      services.log.warn(
        { queue: p.queue, jobId: job?.id, attempts: job?.attemptsMade, err: err.message },
        'job failed',
      );
    });
    worker.on('error', (err) => services.log.error({ queue: p.queue, err }, 'worker error'));
    return { worker, connection };
  });

  for (const p of processors) {
    for (const schedule of p.schedules ?? []) {
      services.queues[p.queue]
        .upsertJobScheduler(schedule.id, { every: schedule.everyMs }, { name: schedule.id })
        .catch((err: unknown) =>
          services.log.error({ err, schedule: schedule.id }, 'could not schedule job'),
        );
    }
  }

  return {
    workers: workers.map((w) => w.worker),
    async stop() {
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
