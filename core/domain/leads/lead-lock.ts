import { redisKeys } from '../../platform/redis-keys.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import type { Services } from '../../wiring/services.js';

// The writers of one lead document take turns under this lock. FerretDB applies an update as a
// read and a write of the whole document, so two writers of different fields at once can lose
// one's change (docs/architecture.md#claims-record-locks-and-effects); and a writer whose change
// depends on the lead (a workflow's update_lead adds tags to those it holds) must read it inside.
// Its writers: a workflow's update_lead step (workflows/runs/actions.ts), a re-analysis's caller
// fields (call-analysis/re-analysis.ts), and the lead's appointment with its record
// (appointments/lead-appointment.ts). The lead's creation is an insert (a claim), and its copy of
// an appointment booked before it converges by reading again (copyAppointmentToNewLead).

/** Runs `fn` holding lead `leadId`'s lock. */
export function withLeadLock<T>(
  services: Services,
  firm: string,
  leadId: string,
  fn: () => Promise<T>,
): Promise<T> {
  return withRecordLock(services.redis, leadLockKey(services, firm, leadId), () => fn());
}

/** The key of lead `leadId`'s lock. */
export const leadLockKey = (services: Services, firm: string, leadId: string): string =>
  redisKeys(services.config).leadLock(firm, leadId);
