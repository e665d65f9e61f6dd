import type { Services } from '../../wiring/services.js';
import { claim } from '../../platform/db/claim.js';
import { enqueue } from '../../../jobs/define.js';
import { JOBS } from '../../../jobs/table.js';
import type { CallDoc } from '../calls/calls.js';
import { getFirm } from '../firms/firms.js';
import { pauseCampaign } from './campaigns.js';
import { findCampaign, type CampaignDoc, type PauseCode, type PausedReason } from './campaign-store.js';
import {
  allowedIn,
  exceeds,
  killSwitchOf,
  noteKillWindow,
  type KillSwitchSettings,
  type WindowCounts,
} from './kill-switch-windows.js';
import { PAUSE_NOTICE_CHANNELS, pauseDocId, pausesCollection } from './pause-notices.js';

// The campaign kill switch (docs/campaigns.md#kill-switch): a running campaign pauses itself when
// more than the firm's share of its last ended calls opted out (default more than 5 % of 40: 3),
// or more than its share of its last dial attempts failed (default more than 50 % of 20: 11). Each
// campaign call is noted as it is dialled and as it ends (kill-switch-windows.ts, before its dial
// slot frees: a campaign paused at a call's end places no next call in that slot); an opt-out or
// a failed dial also counts its window and, over the threshold, pauses the campaign through the
// pause path (pauseCampaign: the count taken again under the campaign's lock) with a
// `paused_reason`, and the firm is told by mail and Slack once per pause (pause-notices.ts).

/**
 * Provider reasons that say the dial itself failed — the carrier, the provider, the number, the
 * account — rather than the callee (busy, no answer, declined).
 */
const DIAL_FAILURE_REASONS = new Set([
  'dial_failed',
  'invalid_destination',
  'telephony_provider_permission_denied',
  'telephony_provider_unavailable',
  'sip_routing_error',
  'marked_as_spam',
  'no_valid_payment',
  'concurrency_limit_reached',
  'no_concurrency_fallback',
]);

/**
 * A finished call whose dial failed: our dial failed for good (the provider refused it, or every
 * attempt erred), or the provider reports a dial failure or an error of its own. A dial the gate
 * blocked was never attempted.
 */
export function dialFailed(call: Pick<CallDoc, 'status' | 'disconnection_reason'>): boolean {
  const reason = call.disconnection_reason;
  if (reason === 'dial_blocked') return false;
  if (call.status === 'error') return true;
  return reason !== null && (DIAL_FAILURE_REASONS.has(reason) || reason.startsWith('error_'));
}

type Trigger = Exclude<PauseCode, 'manual'>;

const windowsFor = (trigger: Trigger, s: KillSwitchSettings) =>
  trigger === 'opt_out_rate' ? { calls: s.window_calls, dials: 0 } : { calls: 0, dials: s.window_dials };

function tripped(trigger: Trigger, s: KillSwitchSettings, counts: WindowCounts): boolean {
  return trigger === 'opt_out_rate'
    ? exceeds(counts.opt_outs, s.opt_out_share, s.window_calls)
    : exceeds(counts.dial_failures, s.failure_share, s.window_dials);
}

const percent = (share: number) => `${Math.round(share * 1000) / 10} %`;

/** The reason of an automatic pause: what the window holds, and the threshold it exceeds. */
export function killReason(
  trigger: Trigger,
  s: KillSwitchSettings,
  counts: WindowCounts,
  pause: number,
  at: Date,
): PausedReason {
  if (trigger === 'opt_out_rate') {
    const allowed = allowedIn(s.opt_out_share, s.window_calls);
    return {
      code: trigger,
      message:
        `${counts.opt_outs} of the campaign's last ${counts.calls} ended calls asked not to be called again: ` +
        `more than the ${allowed} of ${s.window_calls} its firm allows (opt_out_share ${percent(s.opt_out_share)}).`,
      observed: { opt_outs: counts.opt_outs, calls: counts.calls },
      threshold: { share: s.opt_out_share, window: s.window_calls },
      pause,
      at,
    };
  }
  const allowed = allowedIn(s.failure_share, s.window_dials);
  return {
    code: trigger,
    message:
      `${counts.dial_failures} of the campaign's last ${counts.dials} dial attempts failed: ` +
      `more than the ${allowed} of ${s.window_dials} its firm allows (failure_share ${percent(s.failure_share)}).`,
    observed: { dial_failures: counts.dial_failures, dials: counts.dials },
    threshold: { share: s.failure_share, window: s.window_dials },
    pause,
    at,
  };
}

/** The notices of the campaign's current automatic pause, one job per channel (ids derived: added once). */
async function enqueuePauseNotices(services: Services, campaign: CampaignDoc): Promise<void> {
  const pause = campaign.paused_reason?.pause;
  if (pause === undefined) return;
  for (const channel of PAUSE_NOTICE_CHANNELS) {
    await enqueue(
      services.queues,
      JOBS.campaignPauseNotice,
      { campaignId: campaign._id, firm: campaign.firm, pause, channel },
      { retryDelayMs: services.config.callEffectRetryMs },
    );
  }
}

/**
 * After an opt-out or a failed dial was noted: pauses the running campaign when its window is
 * over the threshold. A campaign the switch paused already gets its notices enqueued again (a
 * job that died between the pause and the enqueue is retried and lands here; the ids add nothing).
 */
async function consider(
  services: Services,
  campaignId: string,
  trigger: Trigger,
  settings: KillSwitchSettings,
  counts: WindowCounts,
): Promise<void> {
  const campaign = await findCampaign(services.mongo.db, campaignId);
  if (campaign === null) return;
  if (campaign.status === 'paused' && campaign.paused_reason?.pause !== undefined) {
    await enqueuePauseNotices(services, campaign);
    return;
  }
  if (campaign.status !== 'running' || !tripped(trigger, settings, counts)) return;
  const after = await pauseCampaign(services, campaign, async (current) => {
    // Counted again as the campaign's writer: a resume since the first count emptied the windows.
    const now = await noteKillWindow(services, campaignId, '', 'count', windowsFor(trigger, settings));
    if (!tripped(trigger, settings, now)) return null;
    const pause = (current.auto_pauses ?? 0) + 1;
    const reason = killReason(trigger, settings, now, pause, new Date());
    // The pause's own record (its notices are effects on it), before the campaign says paused.
    const doc = {
      _id: pauseDocId(campaignId, pause),
      campaign_id: campaignId,
      firm: current.firm,
      pause,
      reason,
      created_at: reason.at,
    };
    if (!(await claim(pausesCollection(services.mongo.db), doc))) {
      // A pause that died before the campaign said so: this one takes its place.
      await pausesCollection(services.mongo.db).updateOne({ _id: doc._id }, { $set: { reason } });
    }
    services.log.warn(
      { campaign_id: campaignId, firm: current.firm, code: reason.code, observed: reason.observed },
      'campaign paused by the kill switch',
    );
    return reason;
  });
  if (after.status === 'paused') await enqueuePauseNotices(services, after);
}

/** A campaign call's dial was placed with the provider: it enters the window of dial attempts. */
export async function noteCampaignDial(
  services: Services,
  call: Pick<CallDoc, '_id' | 'campaign_id'>,
): Promise<void> {
  if (call.campaign_id === undefined) return;
  await noteKillWindow(services, call.campaign_id, call._id, 'dial', { calls: 0, dials: 0 });
}

/**
 * A campaign call finished (onCallFinished, on every event of a finished call): a failed dial
 * is noted as one and counts the dial window; a placed call enters the window of ended calls,
 * with its opt-out (the do-not-call listing of its transcript found one), which counts that
 * window. Idempotent: a repeated event notes nothing new, and decides the same.
 */
export async function noteCampaignCallFinished(
  services: Services,
  call: CallDoc,
  optedOut: boolean,
): Promise<void> {
  const campaignId = call.campaign_id;
  if (campaignId === undefined || !call.finished) return;
  const failed = dialFailed(call);
  if (!failed && call.provider_call_id === null) return; // never dialled (blocked, refused before)
  if (!failed && !optedOut) {
    await noteKillWindow(services, campaignId, call._id, 'end', { calls: 0, dials: 0 });
    return;
  }
  const firm = await getFirm(services.mongo.db, call.firm);
  if (firm === null) return;
  const settings = killSwitchOf(firm.settings);
  const trigger: Trigger = failed ? 'dial_failure_rate' : 'opt_out_rate';
  const counts = await noteKillWindow(
    services,
    campaignId,
    call._id,
    failed ? 'dial_failed' : 'end_opt_out',
    windowsFor(trigger, settings),
  );
  await consider(services, campaignId, trigger, settings, counts);
}
