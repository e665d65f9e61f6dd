import type { Services } from '../../wiring/services.js';
import { releaseDialSlot } from '../pacing/dial-slots.js';
import { settleCampaignCall } from '../campaigns/campaign-calls.js';
import type { CallDoc } from './calls.js';
import { recordFinishedCall } from './call-list-index.js';
import { noteCampaignCallFinished } from '../campaigns/kill-switch.js';
import { recordCallEnded } from './record-call-events.js';

/**
 * What a call's end sets going (its call_ended or a not_connected/error outcome, or a dial that
 * failed for good): the call takes its place in list-calls, call.ended is recorded, the firm's
 * dial slot is freed (waking the next job in line), and a campaign call settles its lead.
 * Idempotent, so it runs for every event of a finished call — a worker that died between
 * recording the end and this hook is made good when its job runs again.
 * `optedOut`: the person opted out in this call (its transcript put the number on the firm's
 * do-not-call list), which the campaign kill switch counts.
 */
export async function onCallFinished(
  services: Services,
  call: CallDoc,
  seen: { optedOut?: boolean } = {},
): Promise<void> {
  if (!call.finished) return;
  // Its place in the firm's list-calls index, after the call's own write (a crash before this
  // line is made good by the retried job, which runs this hook again).
  await recordFinishedCall(services, call);
  // call.ended, once (its key), before the campaign's settlement that may complete the campaign.
  await recordCallEnded(services, call);
  // The campaign kill switch, before the slot frees: a campaign it pauses now places no next
  // call in this call's slot.
  if (call.campaign_id !== undefined) {
    await noteCampaignCallFinished(services, call, seen.optedOut === true);
  }
  await releaseDialSlot(services, call.firm, call._id);
  if (call.campaign_id !== undefined) await settleCampaignCall(services, call);
}
