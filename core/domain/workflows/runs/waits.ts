import type { Services } from '../../../wiring/services.js';
import { COLLECTIONS, collection } from '../../../platform/db/collections.js';
import { redisKeys } from '../../../platform/redis-keys.js';
import { withRecordLock } from '../../../platform/redis-mutex.js';
import { replaceById } from '../../../platform/db/upsert.js';

// The `wait_for` steps waiting on events about a lead: one key document per lead (`_id` =
// `<firm>|<lead id>`), read by _id for each event about that lead, written under the lead's lock.

export interface Waiter {
  step_id: string;
  run_id: string;
  /** The event type (or group, `appointment.*`) waited for. */
  event: string;
  /** When the step began waiting: an earlier event does not end it. */
  since: Date;
}

interface WaitsDoc {
  _id: string;
  firm: string;
  waiters: Waiter[];
}

const waits = (services: Services) => collection<WaitsDoc>(services.mongo.db, COLLECTIONS.workflowWaits);
const keyOf = (firm: string, leadId: string) => `${firm}|${leadId}`;

async function change(
  services: Services,
  firm: string,
  leadId: string,
  edit: (waiters: Waiter[]) => Waiter[],
): Promise<void> {
  await withRecordLock(
    services.redis,
    redisKeys(services.config).workflowWaitsLock(firm, leadId),
    async () => {
      const current = await waits(services).findOne({ _id: keyOf(firm, leadId) });
      const before = current?.waiters ?? [];
      const after = edit(before);
      if (after === before) return;
      if (after.length === 0) await waits(services).deleteOne({ _id: keyOf(firm, leadId) });
      else await replaceById(waits(services), keyOf(firm, leadId), { firm, waiters: after });
    },
  );
}

export async function registerWaiter(
  services: Services,
  firm: string,
  leadId: string,
  waiter: Waiter,
): Promise<void> {
  await change(services, firm, leadId, (list) =>
    list.some((w) => w.step_id === waiter.step_id) ? list : [...list, waiter],
  );
}

export async function unregisterWaiter(
  services: Services,
  firm: string,
  leadId: string,
  stepId: string,
): Promise<void> {
  await change(services, firm, leadId, (list) =>
    list.some((w) => w.step_id === stepId) ? list.filter((w) => w.step_id !== stepId) : list,
  );
}

export async function waitersOf(services: Services, firm: string, leadId: string): Promise<Waiter[]> {
  return (await waits(services).findOne({ _id: keyOf(firm, leadId) }))?.waiters ?? [];
}
