import type { EffectRecord } from '../../core/platform/db/effect-records.js';

/**
 * An effect record as a worker killed mid-request leaves it: `running`, marked an hour ago under a
 * lease of `leaseMs` (long over), by an attempt whose token no one holds.
 */
export const runningLeftByDeadAttempt = (leaseMs: number): EffectRecord => ({
  state: 'running',
  attempts: 1,
  started_at: new Date(Date.now() - 3600_000),
  finished_at: null,
  last_error: null,
  result: null,
  lease_token: 'dead',
  lease_until: new Date(Date.now() - 3600_000 + leaseMs),
});
