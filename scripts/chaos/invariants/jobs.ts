import { QUEUE, QUEUE_NAMES } from '../../../jobs/queues.js';
import { row, type Row } from './rows.js';
import { pendingJobs } from './settle.js';
import type { CallFacts, CheckContext } from './context.js';

/** Jobs: none failed for good (refused numbers aside), every queue drained. */
export async function jobRows(ctx: CheckContext, facts: CallFacts): Promise<Row[]> {
  const { cluster } = ctx;
  const { calls, callById } = facts;
  const rows: Row[] = [];
  // A number ending 9999 is refused by the provider for good: its place-call job fails by design
  // (UnrecoverableError, the call ends `error`). Every other failed job is a job lost to a fault.
  const refusals = calls.filter((c) => c.to_number?.endsWith('9999')).length;
  const lost: string[] = [];
  let refused = 0;
  for (const name of QUEUE_NAMES) {
    if ((await cluster.queues[name].getFailedCount()) === 0) continue;
    for (const job of await cluster.queues[name].getFailed(0, -1)) {
      const call = callById.get(String(job.id));
      if (name === QUEUE.calls && call?.to_number?.endsWith('9999') && call.status === 'error') refused++;
      else lost.push(`${name}/${job.name} ${job.id}: ${(job.failedReason ?? '').slice(0, 80)}`);
    }
  }
  rows.push(
    row(
      'no job failed for good (the provider refusing ...9999 numbers aside)',
      `0 (+ ${refusals} refusals)`,
      lost.length === 0 ? `0 (+ ${refused} refusals)` : `${lost.length}; ${lost.slice(0, 3).join('; ')}`,
      lost.length === 0 && refused === refusals,
    ),
  );
  const pending = await pendingJobs(cluster);
  rows.push(
    row(
      'every queue drained (future reminders aside)',
      0,
      pending.total === 0 ? 0 : `${pending.total} (${pending.detail})`,
      pending.total === 0,
    ),
  );
  return rows;
}
