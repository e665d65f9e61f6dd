// The capped backoff of the jobs whose every failure is the service's own (jobs/backoff.ts): the
// wait doubles from the definition's delay up to a few seconds and no further, jittered, with
// attempts enough to outlast an outage of about an hour.
import { describe, expect, it } from 'vitest';
import {
  CAPPED,
  CAPPED_ATTEMPTS,
  CAPPED_MAX_MS,
  RETRY_AFTER,
  backoffStrategy,
  cappedDelay,
} from '../../jobs/backoff.js';
import { CrmError } from '../../core/integrations/crm/clio.js';
import { TeamChatError } from '../../core/integrations/team-chat/slack.js';
import { RETRY_AFTER_CAP_MS, RateLimitedError } from '../../core/platform/retry-after.js';
import { QUEUE } from '../../jobs/queues.js';
import { JOBS } from '../../jobs/table.js';

describe('capped backoff', () => {
  it('doubles from the delay up to CAPPED_MAX_MS and no further, jittered into the upper half', () => {
    expect([1, 2, 3, 4, 5, 10, 30, 999].map((n) => cappedDelay(n, 1000, 0.999999))).toEqual([
      1000, 2000, 4000, 5000, 5000, 5000, 5000, 5000,
    ]);
    expect([1, 2, 3, 4, 999].map((n) => cappedDelay(n, 1000, 0))).toEqual([500, 1000, 2000, 2500, 2500]);
    // BullMQ's exponential for the same failures: 1 s, 2 s, … 512 s after the 10th.
    expect(cappedDelay(10, 1000, 0.5)).toBeLessThanOrEqual(CAPPED_MAX_MS);
  });

  it('is the strategy the workers declare, reading the job’s own delay', async () => {
    const job = { opts: { backoff: { type: CAPPED, delay: 200 } } } as never;
    const waits = await Promise.all([1, 2, 8].map((n) => backoffStrategy(n, CAPPED, new Error('x'), job)));
    expect(waits[0]).toBeGreaterThanOrEqual(100);
    expect(waits[0]).toBeLessThanOrEqual(200);
    expect(waits[2]).toBeGreaterThanOrEqual(CAPPED_MAX_MS / 2);
    expect(waits[2]).toBeLessThanOrEqual(CAPPED_MAX_MS);
    expect(() => backoffStrategy(1, 'linear', new Error('x'))).toThrow(/unknown backoff type/);
  });

  it("every job of the webhooks queue but the disabled-endpoint mail uses it, lasting an hour's outage", () => {
    const webhooks = Object.values(JOBS).filter((j) => j.queue === QUEUE.webhooks);
    const cappedJobs = webhooks.filter((j) => {
      const b = j.options?.backoff;
      return typeof b === 'object' && b.type === CAPPED;
    });
    expect(cappedJobs.map((j) => j.name).sort()).toEqual([
      'webhook-deliver',
      'webhook-fanout',
      'webhook-replay',
    ]);
    for (const j of cappedJobs) expect(j.options?.attempts).toBe(CAPPED_ATTEMPTS);
    // The shortest time the attempts last when every one fails at once (the lowest jitter).
    let lasts = 0;
    for (let n = 1; n < CAPPED_ATTEMPTS; n++) lasts += cappedDelay(n, 1000, 0);
    expect(lasts).toBeGreaterThanOrEqual(40 * 60_000);
  });

  it('the deliveries a webhook sender does not send again (call and booking events) outlast an hour of outage too', () => {
    for (const job of [JOBS.callEvent, JOBS.bookingEvent]) {
      expect(job.options?.backoff, job.name).toEqual({ type: CAPPED, delay: 1000 });
      expect(job.options?.attempts, job.name).toBe(CAPPED_ATTEMPTS);
    }
    // The call event keeps its short retention.
    expect(JOBS.callEvent.options?.removeOnComplete).toEqual({ age: 3600, count: 100 });
  });
});

describe('exponential backoff honouring Retry-After', () => {
  const job = { opts: { backoff: { type: RETRY_AFTER, delay: 2000 } } } as never;
  const limited = (seconds: number | null) =>
    new CrmError('Clio answered 429. Still limited after waiting; trying later.', false, false, 429, {
      cause: new RateLimitedError('Clio', seconds === null ? null : seconds * 1000),
    });

  it('is BullMQ’s exponential from the job’s delay when no Retry-After was asked', async () => {
    const waits = await Promise.all(
      [1, 2, 3, 11].map((n) => backoffStrategy(n, RETRY_AFTER, new Error('Clio answered 500'), job)),
    );
    expect(waits).toEqual([2000, 4000, 8000, 2_048_000]);
    expect(await backoffStrategy(1, RETRY_AFTER, limited(null), job)).toBe(2000);
  });

  it('waits a 429’s Retry-After when longer, found through the client’s error (Clio’s, Slack’s)', async () => {
    expect(await backoffStrategy(1, RETRY_AFTER, limited(45), job)).toBe(45_000);
    expect(await backoffStrategy(6, RETRY_AFTER, limited(45), job)).toBe(64_000);
    const slack = new TeamChatError('Slack answered 429.', false, false, {
      cause: new RateLimitedError('Slack', 90_000),
    });
    expect(await backoffStrategy(2, RETRY_AFTER, slack, job)).toBe(90_000);
    // At most a day, however long Clio asks for.
    expect(await backoffStrategy(1, RETRY_AFTER, limited(10 * 86_400), job)).toBe(RETRY_AFTER_CAP_MS);
  });

  it('is the call effect’s backoff', () => {
    expect(JOBS.callEffect.options?.backoff).toEqual({ type: RETRY_AFTER, delay: 2000 });
  });
});
