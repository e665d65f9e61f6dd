import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import { KILL_SWITCH_DEFAULTS, MAX_KILL_WINDOW, type FirmSettings } from '../firms/firm-settings.js';

export { KILL_SWITCH_DEFAULTS, MAX_KILL_WINDOW };

// The kill switch's counting (docs/campaigns.md#kill-switch): per campaign, the window of its last
// ended calls (how many opted out) and the window of its last dial attempts (how many failed), in
// Redis, moved by one script so that a call counts once however often its events come (a retried
// job, a redelivered webhook, call_ended and call_analyzed both) — a flag per call, set once, and
// the call's id pushed into a window when its first flag of that kind is set. Not in MongoDB:
// FerretDB pushes no range, sort or limit down, so "the last N of a campaign" would read every
// call of the campaign each time (docs/operations.md#data-access-on-ferretdb-and-mongodb).

export interface KillSwitchSettings {
  opt_out_share: number;
  window_calls: number;
  failure_share: number;
  window_dials: number;
}

/** The firm's thresholds, each absent one its default. */
export function killSwitchOf(settings: Pick<FirmSettings, 'campaign_kill_switch'>): KillSwitchSettings {
  return { ...KILL_SWITCH_DEFAULTS, ...(settings.campaign_kill_switch ?? {}) };
}

/**
 * How many of a full window may opt out (or fail) without pausing: the share of the window,
 * rounded down. The campaign pauses when the window holds more than that — also before the
 * window is full (3 opt-outs in the first 10 calls exceed 5 % of 40 as surely as 3 in 40 do).
 */
export function allowedIn(share: number, window: number): number {
  // 0.07 × 100 is 7.000000000000001 in binary: a hair below the next integer is that integer.
  return Math.floor(share * window + 1e-9);
}

/** Does `count` in the window exceed what the share allows? */
export const exceeds = (count: number, share: number, window: number): boolean =>
  count > allowedIn(share, window);

/** A window's count now: `{opt_outs, calls}` of the ended calls, `{dial_failures, dials}` of the dials. */
export interface WindowCounts {
  opt_outs: number;
  calls: number;
  dial_failures: number;
  dials: number;
}

/** What is noted about a campaign call; `count` notes nothing and counts. */
export type KillNote = 'dial' | 'dial_failed' | 'end' | 'end_opt_out' | 'count';

/** The windows live this long after the campaign's last call (as its counters do after its end). */
const TTL_MS = 30 * 24 * 3600 * 1000;

const NOTE = loadRedisScript(new URL('./kill-switch.lua', import.meta.url), {
  keys: ['marks', 'calls', 'dials'],
  args: ['call', 'what', 'calls_window', 'dials_window', 'max', 'ttl_ms'],
});

function windowKeys(services: Services, campaignId: string) {
  const keys = redisKeys(services.config);
  return {
    marks: keys.campaignKillMarks(campaignId),
    calls: keys.campaignKillCalls(campaignId),
    dials: keys.campaignKillDials(campaignId),
  };
}

/**
 * Notes one call of the campaign and counts the windows (as far as asked: 0 counts nothing).
 * Idempotent: the same note again changes nothing and counts the same.
 */
export async function noteKillWindow(
  services: Services,
  campaignId: string,
  callId: string,
  what: KillNote,
  windows: { calls: number; dials: number },
): Promise<WindowCounts> {
  const reply = (await NOTE.run(services.redis, windowKeys(services, campaignId), {
    call: callId,
    what,
    calls_window: windows.calls,
    dials_window: windows.dials,
    max: MAX_KILL_WINDOW,
    ttl_ms: TTL_MS,
  })) as number[];
  return {
    opt_outs: reply[0] ?? 0,
    calls: reply[1] ?? 0,
    dial_failures: reply[2] ?? 0,
    dials: reply[3] ?? 0,
  };
}

/**
 * Empties both windows (a resume after an automatic pause: the firm has seen those calls, the
 * switch counts from the next ones). The marks stay, so no call already counted enters again.
 */
export async function resetKillWindows(services: Services, campaignId: string): Promise<void> {
  const keys = windowKeys(services, campaignId);
  await services.redis.del(keys.calls, keys.dials);
}
