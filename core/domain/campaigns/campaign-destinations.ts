import { parseDialable, type Dialable } from '../contact-points/phones.js';
import type { FirmDoc } from '../firms/firms.js';

// Which of a campaign's phones its launch calls (docs/campaigns.md#what-a-launch-counts): those the
// firm may dial when it launches, not when they joined. An add keeps the count of its distinct
// phones by destination (the country, and whether the number is premium-rate or shared-cost); the
// launch sums the destinations the firm's settings allow at that moment (a few keys, whatever the
// number of leads) and keeps them, so the fan-out queues exactly those phones.

/** The destinations a launch allowed: the firm's allowed_call_countries and premium rule then. */
export interface LaunchDestinations {
  countries: string[];
  premium: boolean;
}

/** A phone's destination key: its country, with `:costly` for a premium-rate or shared-cost number. */
export const destinationKey = (dialable: Dialable): string =>
  dialable.costly === undefined ? dialable.country : `${dialable.country}:costly`;

/** What the firm allows now, as allowedDestination (core/domain/calls/calls.ts) judges a number. */
export function launchDestinations(firm: Pick<FirmDoc, 'settings'>): LaunchDestinations {
  return {
    countries: [...firm.settings.allowed_call_countries],
    premium: firm.settings.allow_premium_numbers === true,
  };
}

function keyAllowed(key: string, allowed: LaunchDestinations): boolean {
  const [country, costly] = key.split(':');
  return allowed.countries.includes(country!) && (costly === undefined || allowed.premium);
}

/**
 * The campaign's count by destination when it holds every phone of the campaign (`callable`), else
 * undefined: a campaign made before the count was kept, or one whose leads a release before it
 * added during a rolling deploy (that release adds to `callable` and its pages, not to the count).
 * Without it the launch queues every phone, as before the count was kept, and counts them all.
 */
export function completeCount(
  byDestination: Readonly<Record<string, number>> | undefined,
  callable: number,
): Readonly<Record<string, number>> | undefined {
  if (byDestination === undefined) return undefined;
  let total = 0;
  for (const count of Object.values(byDestination)) total += count;
  return total === callable ? byDestination : undefined;
}

/** The phones a launch queues: those of the destinations allowed. */
export function countAllowed(
  byDestination: Readonly<Record<string, number>>,
  allowed: LaunchDestinations,
): number {
  let total = 0;
  for (const [key, count] of Object.entries(byDestination)) if (keyAllowed(key, allowed)) total += count;
  return total;
}

/** Whether some phone counted by destination is of a destination `allowed` does not take. */
export function leavesOut(
  byDestination: Readonly<Record<string, number>>,
  allowed: LaunchDestinations,
): boolean {
  return Object.entries(byDestination).some(([key, count]) => count > 0 && !keyAllowed(key, allowed));
}

/** Whether the fan-out queues this phone: allowed at launch (always, for a launch that kept none). */
export function queuedAtLaunch(allowed: LaunchDestinations | null | undefined, phone: string): boolean {
  if (allowed === undefined || allowed === null) return true;
  const dialable = parseDialable(phone);
  return dialable !== null && keyAllowed(destinationKey(dialable), allowed);
}

/** A lead's phone a campaign keeps: a number the service may dial somewhere, not do-not-call. */
export function dialableLeadPhone(lead: { phone: string | null; do_not_call: boolean }): Dialable | null {
  if (lead.do_not_call || lead.phone === null) return null;
  return parseDialable(lead.phone);
}
