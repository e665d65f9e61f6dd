import type { Services } from '../../../core/wiring/services.js';
import type { FirmDoc } from '../../../core/domain/firms/firms.js';
import type { CallDoc } from '../../../core/domain/calls/calls.js';
import { decideAtRequest } from '../../../core/domain/compliance/dial-gate.js';
import { clock } from '../../../core/platform/clock.js';
import { dialBlocked, dialDeferred } from '../../../core/platform/errors.js';

/**
 * create-outbound-call's request stage of the dial gate: allowed → null (dial now); blocked →
 * 409 dial_blocked; deferred → 409 dial_deferred with retry_at, or with `when_allowed` the
 * instant it is scheduled for (the place-call job is delayed until then).
 */
export async function requestGate(
  services: Services,
  firm: FirmDoc,
  call: CallDoc,
  whenAllowed: boolean,
): Promise<{ at: number; delayMs: number } | null> {
  const { decision } = await decideAtRequest(services, {
    firm,
    phone: call.to_number ?? '',
    callId: call._id,
    stage: 'request',
  });
  if (decision.answer === 'allow') return null;
  const details = [{ path: '/toNumber', message: `${decision.reason}: ${decision.message}` }];
  if (decision.answer === 'block') {
    throw dialBlocked(`The dial gate refuses this number (${decision.reason}): ${decision.message}`, details);
  }
  const now = clock.now();
  if (!whenAllowed) {
    throw dialDeferred(
      `The number may be called from ${new Date(decision.until).toISOString()} (${decision.reason}); retry then, or send "when_allowed": true to schedule it.`,
      details,
      decision.until,
      now,
    );
  }
  return { at: decision.until, delayMs: Math.max(0, decision.until - now) };
}
