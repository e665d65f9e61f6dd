// BullMQ jobs per call, by queue, read from what BullMQ keeps anyway, so that counting costs no
// Redis command while a burst runs: each queue's `id` counter (BullMQ's add script INCRs it on
// every add, a no-op add of a known job id included) and its completed and failed metrics counts
// (the workers' `metrics` option: one count per finished job). A job parked and run again
// (moveToDelayed) is one add and one finish.
import { QUEUE_NAMES } from '../../jobs/queues.js';
import type { App } from './stack.js';

interface Counts {
  added: number;
  completed: number;
  failed: number;
}

async function read(app: App): Promise<Map<string, Counts>> {
  const out = new Map<string, Counts>();
  await Promise.all(
    QUEUE_NAMES.map(async (name) => {
      const queue = app.queues[name];
      const [added, completed, failed] = await Promise.all([
        app.redis.get(queue.toKey('id')),
        app.redis.hget(queue.toKey('metrics:completed'), 'count'),
        app.redis.hget(queue.toKey('metrics:failed'), 'count'),
      ]);
      out.set(name, {
        added: Number(added ?? 0),
        completed: Number(completed ?? 0),
        failed: Number(failed ?? 0),
      });
    }),
  );
  return out;
}

/**
 * Takes a reading now; `perCall(calls)` later says the jobs added and finished per call since,
 * by queue: "jobs per call: 14.0 added (call-effects 5.0, …), 14.0 finished (…), 0 failed".
 */
export async function trackJobs(app: App): Promise<{ perCall(calls: number): Promise<string> }> {
  const before = await read(app);
  return {
    async perCall(calls) {
      const after = await read(app);
      const per = (pick: (c: Counts) => number) => {
        const rows = [...after.entries()]
          .map(([q, c]) => [q, (pick(c) - pick(before.get(q)!)) / calls] as const)
          .filter(([, n]) => n > 0)
          .sort((a, b) => b[1] - a[1]);
        const total = rows.reduce((a, [, n]) => a + n, 0);
        return `${total.toFixed(1)}${rows.length > 0 ? ` (${rows.map(([q, n]) => `${q} ${n.toFixed(1)}`).join(', ')})` : ''}`;
      };
      return `jobs per call: ${per((c) => c.added)} added, ${per((c) => c.completed)} completed, ${per((c) => c.failed)} failed`;
    },
  };
}
