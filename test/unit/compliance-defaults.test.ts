import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../core/platform/config.js';
import type { Logger } from '../../core/platform/logger.js';
import { warnIfComplianceWidened } from '../../core/domain/compliance/compliance-defaults.js';

const base = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  MONGODB_URI: 'mongodb://127.0.0.1:27017/x',
  ADMIN_API_KEY: 'a'.repeat(32),
  SESSION_SECRET: 's'.repeat(32),
  SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
};

function warnings(env: Record<string, string>): string[] {
  const lines: string[] = [];
  const log = { warn: (_fields: unknown, message: string) => lines.push(message) } as unknown as Logger;
  warnIfComplianceWidened(loadConfig({ ...base, ...env }), log);
  return lines;
}

describe('the compliance defaults', () => {
  it('are 08:00-21:00, 3 attempts a day, state rules on; no warning with them or narrower ones', () => {
    const config = loadConfig(base);
    expect(config.callingHours).toEqual({ start: '08:00', end: '21:00' });
    expect(config.dialAttemptsPerDay).toBe(3);
    expect(config.complianceStateRules).toBe(true);
    expect(config.campaignDefaultPurpose).toBe('marketing');
    expect(config.informationalConsent).toBe(true);
    expect(warnings({})).toEqual([]);
    expect(warnings({ CALLING_HOURS: '09:00-20:00', DIAL_ATTEMPTS_PER_DAY: '2' })).toEqual([]);
    expect(warnings({ CAMPAIGN_DEFAULT_PURPOSE: 'marketing' })).toEqual([]);
  });

  it('widened, say so in exactly one warn line naming each', () => {
    const lines = warnings({
      CALLING_HOURS: '00:00-24:00',
      DIAL_ATTEMPTS_PER_DAY: '1000',
      COMPLIANCE_STATE_RULES: 'false',
      CAMPAIGN_DEFAULT_PURPOSE: 'informational',
      INFORMATIONAL_CONSENT: 'false',
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('CALLING_HOURS=00:00-24:00');
    expect(lines[0]).toContain('DIAL_ATTEMPTS_PER_DAY=1000');
    expect(lines[0]).toContain('COMPLIANCE_STATE_RULES=false');
    expect(lines[0]).toContain('CAMPAIGN_DEFAULT_PURPOSE=informational');
    expect(lines[0]).toContain('INFORMATIONAL_CONSENT=false');
    expect(warnings({ CALLING_HOURS: '07:30-21:00' })).toHaveLength(1);
    expect(warnings({ CAMPAIGN_DEFAULT_PURPOSE: 'informational' })).toEqual([
      expect.stringContaining('CAMPAIGN_DEFAULT_PURPOSE=informational'),
    ]);
  });

  it('refuse calling hours that are not HH:MM-HH:MM with the start first, and an unknown purpose', () => {
    for (const bad of ['8-21', '08:00-21:60', '21:00-08:00', '08:00-08:00', '08:00-24:30']) {
      expect(() => loadConfig({ ...base, CALLING_HOURS: bad }), bad).toThrow(/CALLING_HOURS/);
    }
    expect(() => loadConfig({ ...base, DIAL_ATTEMPTS_PER_DAY: '0' })).toThrow(/DIAL_ATTEMPTS_PER_DAY/);
    expect(() => loadConfig({ ...base, CAMPAIGN_DEFAULT_PURPOSE: 'sales' })).toThrow(
      /CAMPAIGN_DEFAULT_PURPOSE/,
    );
  });
});
