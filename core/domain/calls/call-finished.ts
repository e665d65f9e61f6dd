import type { Services } from '../../wiring/services.js';
import { releaseDialSlot } from '../pacing/dial-slots.js';
import { settleCampaignCall, settlesOnAnalysis } from '../campaigns/campaign-calls.js';
import type { CallDoc } from './calls.js';
import { recordFinishedCall } from './call-list-index.js';
import { noteCampaignCallFinished } from '../campaigns/kill-switch.js';
import { recordCallEnded } from './record-call-events.js';
import { RecentMemo } from '../../platform/recent-memo.js';

/**
 * The finished calls whose hook ran to its end in this process lately with nothing left for a
 * later event of the call to do, and whether it counted an opt-out: the call's call_analyzed after
 * its call_ended would run it again only to find every step done (a point read of the call's
 * effects and a refused insert of call.ended, the list index, the slot). Not kept for a campaign
 * call whose lead settles on the analysis still to come. A process that did not finish the hook
 * here (another worker, one that died mid-hook, one started since) has no entry and runs it.
 * Kept 2 minutes (a provider's call_analyzed follows its call_ended within seconds), at most
 * 10,000 calls: a few hundred KB at the most, full within the soak's warm-up.
 */
export const finishedHere = new RecentMemo<string, { optedOut: boolean }>(10_000, 2 * 60_000);

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
  const key = `${call.firm}|${call._id}`;
  const optedOut = seen.optedOut === true;
  const done = finishedHere.get(key);
  // Done here already, and this event brings no opt-out the campaign's kill switch has not counted.
  if (done !== undefined && (done.optedOut || !optedOut)) return;
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
  if (call.campaign_id === undefined || !settlesOnAnalysis(call)) finishedHere.set(key, { optedOut });
}
