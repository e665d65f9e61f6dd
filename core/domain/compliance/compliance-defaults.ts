import type { Config } from '../../platform/config.js';
import type { Logger } from '../../platform/logger.js';

// The platform's compliance defaults (CALLING_HOURS, DIAL_ATTEMPTS_PER_DAY,
// COMPLIANCE_STATE_RULES, CAMPAIGN_DEFAULT_PURPOSE, INFORMATIONAL_CONSENT): a process whose values are wider than the
// safe defaults says so in one `warn` line at start (a test stack, `npm start` with the simulator).

export const DEFAULT_CALLING_HOURS = { start: '08:00', end: '21:00' } as const;
export const DEFAULT_DIAL_ATTEMPTS_PER_DAY = 3;
export const DEFAULT_CAMPAIGN_PURPOSE = 'marketing' as const;

/** What is wider than the defaults, in words; empty when nothing is. */
export function widerThanDefaults(config: Config): string[] {
  const wider: string[] = [];
  const { start, end } = config.callingHours;
  if (start < DEFAULT_CALLING_HOURS.start || end > DEFAULT_CALLING_HOURS.end) {
    wider.push(`CALLING_HOURS=${start}-${end}`);
  }
  if (config.dialAttemptsPerDay > DEFAULT_DIAL_ATTEMPTS_PER_DAY) {
    wider.push(`DIAL_ATTEMPTS_PER_DAY=${config.dialAttemptsPerDay}`);
  }
  if (!config.complianceStateRules) wider.push('COMPLIANCE_STATE_RULES=false');
  if (config.campaignDefaultPurpose !== DEFAULT_CAMPAIGN_PURPOSE) {
    wider.push(`CAMPAIGN_DEFAULT_PURPOSE=${config.campaignDefaultPurpose}`);
  }
  if (!config.informationalConsent) wider.push('INFORMATIONAL_CONSENT=false');
  return wider;
}

/** The one `warn` line at start when the compliance defaults are widened. */
export function warnIfComplianceWidened(config: Config, log: Logger): void {
  const wider = widerThanDefaults(config);
  if (wider.length === 0) return;
  log.warn(
    { compliance_widened: wider },
    `compliance defaults widened (${wider.join(', ')}): calls may be dialled outside ${DEFAULT_CALLING_HOURS.start}-${DEFAULT_CALLING_HOURS.end} callee time, more than ${DEFAULT_DIAL_ATTEMPTS_PER_DAY} times a day, without state rules, or by a campaign to leads without consent; never in production`,
  );
}
