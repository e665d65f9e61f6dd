import { describe, expect, it } from 'vitest';
import {
  KILL_SWITCH_DEFAULTS,
  allowedIn,
  exceeds,
  killSwitchOf,
} from '../../core/domain/campaigns/kill-switch-windows.js';
import { dialFailed, killReason } from '../../core/domain/campaigns/kill-switch.js';
import { DEFAULT_SETTINGS, mergeSettings } from '../../core/domain/firms/firm-settings.js';

// The campaign kill switch's rule (docs/campaigns.md#kill-switch): more than share × window
// (rounded down) in the window pauses, also before the window is full; which ended calls are
// failed dials; and what the pause's reason says.

describe('the kill switch rule', () => {
  it('pauses at more than 5 % of 40 opt-outs by default: 3, in the first 10 calls as in the last 40', () => {
    const { opt_out_share: share, window_calls: window } = KILL_SWITCH_DEFAULTS;
    expect(allowedIn(share, window)).toBe(2);
    expect(exceeds(2, share, window)).toBe(false);
    expect(exceeds(3, share, window)).toBe(true);
    // Before 40 calls have ended the window is every ended call; the allowance is the same.
    const firstTen = { opt_outs: 3, calls: 10 };
    expect(exceeds(firstTen.opt_outs, share, window)).toBe(true);
  });

  it('pauses at more than 50 % of 20 failed dials by default: 11', () => {
    const { failure_share: share, window_dials: window } = KILL_SWITCH_DEFAULTS;
    expect(allowedIn(share, window)).toBe(10);
    expect([exceeds(10, share, window), exceeds(11, share, window)]).toEqual([false, true]);
  });

  it('rounds the allowance down without binary noise; 0 pauses at the first, 1 never', () => {
    expect(allowedIn(0.07, 100)).toBe(7); // 0.07 × 100 = 7.000000000000001
    expect(allowedIn(0.29, 100)).toBe(29); // 28.999999999999996
    expect(allowedIn(0.1, 15)).toBe(1);
    expect(exceeds(1, 0, 40)).toBe(true);
    expect(exceeds(40, 1, 40)).toBe(false);
  });

  it("reads the firm's settings, each absent field its default", () => {
    expect(killSwitchOf(DEFAULT_SETTINGS)).toEqual(KILL_SWITCH_DEFAULTS);
    const settings = mergeSettings(
      DEFAULT_SETTINGS,
      { campaign_kill_switch: { window_calls: 10 } },
      { allowHttpAndLoopback: false },
    );
    expect(killSwitchOf(settings)).toEqual({ ...KILL_SWITCH_DEFAULTS, window_calls: 10 });
  });
});

describe('a failed dial', () => {
  it("is our dial failing for good or the provider's dial failure or error, not the callee, not a blocked dial", () => {
    const call = (status: string, disconnection_reason: string | null) =>
      dialFailed({ status: status as 'ended', disconnection_reason });
    expect(call('error', 'dial_failed')).toBe(true);
    expect(call('error', 'dial_blocked')).toBe(false);
    expect(call('not_connected', 'dial_failed')).toBe(true);
    expect(call('ended', 'invalid_destination')).toBe(true);
    expect(call('ended', 'error_retell')).toBe(true);
    expect(call('ended', 'error_some_new_thing')).toBe(true);
    expect(call('not_connected', 'dial_no_answer')).toBe(false);
    expect(call('not_connected', 'dial_busy')).toBe(false);
    expect(call('ended', 'user_hangup')).toBe(false);
    expect(call('ended', 'voicemail_reached')).toBe(false);
  });
});

describe('the reason of a pause', () => {
  it('says what the window held and the threshold it exceeded', () => {
    const at = new Date('2026-03-02T15:00:00Z');
    const reason = killReason(
      'opt_out_rate',
      KILL_SWITCH_DEFAULTS,
      { opt_outs: 3, calls: 12, dial_failures: 0, dials: 0 },
      1,
      at,
    );
    expect(reason).toEqual({
      code: 'opt_out_rate',
      message:
        "3 of the campaign's last 12 ended calls asked not to be called again: more than the 2 of 40 its firm allows (opt_out_share 5 %).",
      observed: { opt_outs: 3, calls: 12 },
      threshold: { share: 0.05, window: 40 },
      pause: 1,
      at,
    });
    const dials = killReason(
      'dial_failure_rate',
      { ...KILL_SWITCH_DEFAULTS, window_dials: 10 },
      { opt_outs: 0, calls: 0, dial_failures: 6, dials: 9 },
      2,
      at,
    );
    expect(dials).toMatchObject({
      code: 'dial_failure_rate',
      observed: { dial_failures: 6, dials: 9 },
      threshold: { share: 0.5, window: 10 },
      pause: 2,
    });
    expect(dials.message).toContain('more than the 5 of 10');
  });
});
