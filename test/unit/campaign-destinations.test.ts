import { describe, expect, it } from 'vitest';
import {
  completeCount,
  countAllowed,
  leavesOut,
  queuedAtLaunch,
} from '../../core/domain/campaigns/campaign-destinations.js';

// What a launch counts and queues (docs/campaigns.md#what-a-launch-counts): the phones of the
// destinations the firm allows when it launches, counted from the campaign's count by destination.

const US_CA = { countries: ['US', 'CA'], premium: false };
const byDestination = { US: 3, CA: 2, GB: 1, 'US:costly': 1 };

describe('a launch', () => {
  it('counts the phones of the destinations allowed, a premium-rate one only when premium is allowed', () => {
    expect(countAllowed(byDestination, US_CA)).toBe(5);
    expect(countAllowed(byDestination, { countries: ['US'], premium: true })).toBe(4);
    expect(countAllowed(byDestination, { countries: ['US', 'CA', 'GB'], premium: true })).toBe(7);
  });

  it('leaves phones out only when a counted destination is not allowed', () => {
    expect(leavesOut(byDestination, US_CA)).toBe(true);
    expect(leavesOut({ US: 3, CA: 2 }, US_CA)).toBe(false);
    expect(leavesOut({ US: 3, GB: 0 }, US_CA)).toBe(false);
    expect(leavesOut({ 'US:costly': 1 }, US_CA)).toBe(true);
  });

  it('queues a phone of an allowed destination, and every phone when it kept none', () => {
    expect(queuedAtLaunch(US_CA, '+12125550101')).toBe(true);
    expect(queuedAtLaunch(US_CA, '+14165550123')).toBe(true);
    expect(queuedAtLaunch(US_CA, '+442071234567')).toBe(false);
    expect(queuedAtLaunch(undefined, '+442071234567')).toBe(true);
    expect(queuedAtLaunch(null, '+442071234567')).toBe(true);
  });

  it('uses its count by destination only when the count holds every phone of the campaign', () => {
    expect(completeCount(byDestination, 7)).toBe(byDestination);
    // Phones an older release added (a rolling deploy): in `callable`, not in the count.
    expect(completeCount(byDestination, 10)).toBeUndefined();
    expect(completeCount({}, 2)).toBeUndefined();
    expect(completeCount({}, 0)).toEqual({});
    expect(completeCount(undefined, 2)).toBeUndefined();
  });
});
