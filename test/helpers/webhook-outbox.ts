import { expect } from 'vitest';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { Stack } from './stack.js';

/**
 * Asserts that no delivery waits in the webhook outbox: one there is pending work, as a job in a
 * queue is (an add that took longer than ENQUEUE_TIMEOUT_MS on a busy machine sends it there,
 * and a worker's drain moves it on within a second or so). For the `eventually` of a "drained" wait.
 */
export async function expectOutboxEmpty(stack: Stack): Promise<void> {
  const outbox = stack.services.mongo.db.collection(COLLECTIONS.webhookOutbox);
  expect(await outbox.countDocuments({}), 'deliveries in the webhook outbox').toBe(0);
}
