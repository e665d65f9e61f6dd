// Work that cannot go on yet, and knows when to look again: another attempt holds it under a
// live lease (a reminder being sent, an effect under way), or something it must wait for has
// not happened yet (a booking's event still waiting in the webhook outbox). A job that meets
// this sleeps until `until`, delayed in its queue, spending no attempt (workers/runner.ts parks
// it): waiting is not failing, and a wait must never use up the retries of a job.

export class BusyUntilError extends Error {
  constructor(
    message: string,
    /** When to look again (ms since epoch, this process's clock). */
    readonly until: number,
  ) {
    super(message);
    this.name = 'BusyUntilError';
  }
}

/**
 * How often work under way renews its lease: three times per lease (`leaseMs`, how long a lease
 * holds without a renewal), so one late renewal does not lose it.
 */
export const leaseRenewMs = (leaseMs: number): number => Math.floor(leaseMs / 3);
