import type { Services } from '../../wiring/services.js';
import type { FirmDoc } from '../firms/firms.js';
import type { Frozen } from '../../platform/db/read-cache.js';
import type { CallDoc, GatePass } from './calls.js';
import { judgeNewCall } from '../compliance/dial-gate.js';
import { parseDialable } from '../contact-points/phones.js';
import { clock } from '../../platform/clock.js';
import { dialBlocked, dialDeferred } from '../../platform/errors.js';

/**
 * create-outbound-call's request stage of the dial gate, judged as soon as the firm is known
 * (beside the agent's read); the returned hook binds it to the new call: allowed → dial now;
 * blocked (over the frequency cap too, unless `when_allowed`) → 409 dial_blocked; deferred (the
 * callee's hours) → 409 dial_deferred with retry_at, or with
 * `when_allowed` the instant it is scheduled for (the place-call job is delayed until then).
 * The decision is recorded either way (before a refusal; beside the call's insert otherwise).
 */
export function requestGate(
  services: Services,
  firm: Frozen<FirmDoc>,
  toNumber: string,
  whenAllowed: boolean,
): (call: CallDoc) => Promise<GatePass> {
  const judging = judgeNewCall(services, { firm, phone: parseDialable(toNumber)?.e164 ?? toNumber });
  // Not awaited until the call is created: a request refused earlier (no agent) leaves it unread.
  judging.catch(() => undefined);
  return async (call) => {
    const { decision, record } = (await judging)(call._id, whenAllowed);
    if (decision.answer === 'allow') return { scheduled: null, record };
    if (!(decision.answer === 'defer' && whenAllowed)) await record();
    const details = [{ path: '/toNumber', message: `${decision.reason}: ${decision.message}` }];
    if (decision.answer === 'block') {
      const retry =
        decision.retryAt === undefined
          ? ''
          : ` Send "when_allowed": true to have it placed from ${new Date(decision.retryAt).toISOString()}.`;
      throw dialBlocked(
        `The dial gate refuses this number (${decision.reason}): ${decision.message}${retry}`,
        details,
        decision.retryAt,
      );
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
    return { scheduled: { at: decision.until, delayMs: Math.max(0, decision.until - now) }, record };
  };
}
