// REDIS_SENTINELS / REDIS_SENTINEL_NAME read into the settings every connection is made from,
// and the malformed values refused with the variable's name (the failover itself:
// test/resilience/redis-sentinel-failover.test.ts).
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../core/platform/config.js';
import { redisSettings } from '../../core/platform/redis.js';

const base = {
  REDIS_URL: 'redis://:s3cret@unused:6379/2',
  MONGODB_URI: 'mongodb://127.0.0.1:27017/t',
  ADMIN_API_KEY: 'a'.repeat(32),
  SESSION_SECRET: 'b'.repeat(32),
  SECRETS_KEY: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
};

function problems(env: Record<string, string>): string {
  try {
    redisSettings(loadConfig({ ...base, ...env }));
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join('\n');
    throw err;
  }
  return '';
}

describe('Sentinel settings', () => {
  it('give the Sentinels and the name; REDIS_URL keeps the password and database', () => {
    const settings = redisSettings(
      loadConfig({
        ...base,
        REDIS_SENTINELS: '10.0.0.1:26379, sentinel-b.internal:26380',
        REDIS_SENTINEL_NAME: 'intake',
      }),
    );
    expect(settings).toEqual({
      url: base.REDIS_URL,
      sentinel: {
        sentinels: [
          { host: '10.0.0.1', port: 26379 },
          { host: 'sentinel-b.internal', port: 26380 },
        ],
        name: 'intake',
      },
    });
  });

  it('are absent without the variables', () => {
    expect(redisSettings(loadConfig(base))).toEqual({ url: base.REDIS_URL });
  });

  it('are refused with REDIS_CLUSTER=true (a cluster fails over by itself), naming both', () => {
    const both = { REDIS_SENTINELS: '10.0.0.1:26379', REDIS_SENTINEL_NAME: 'intake', REDIS_CLUSTER: 'true' };
    expect(problems(both)).toMatch(/REDIS_CLUSTER=true and REDIS_SENTINELS are exclusive/);
    expect(redisSettings(loadConfig({ ...base, REDIS_CLUSTER: 'true' }))).toEqual({
      url: base.REDIS_URL,
      cluster: true,
    });
  });

  it('refuse one variable without the other, entries without a port, bad ports and bad names', () => {
    expect(problems({ REDIS_SENTINELS: '10.0.0.1:26379' })).toContain('REDIS_SENTINEL_NAME is missing');
    expect(problems({ REDIS_SENTINEL_NAME: 'intake' })).toContain('REDIS_SENTINELS is missing');
    for (const bad of ['10.0.0.1', '10.0.0.1:', ':26379', 'a b:1', '10.0.0.1:26379/x']) {
      expect(problems({ REDIS_SENTINELS: bad, REDIS_SENTINEL_NAME: 'intake' }), bad).toContain(
        'REDIS_SENTINELS',
      );
    }
    for (const port of ['0', '65536', '99999']) {
      expect(
        problems({ REDIS_SENTINELS: `10.0.0.1:${port}`, REDIS_SENTINEL_NAME: 'intake' }),
        port,
      ).toContain('REDIS_SENTINELS: 10.0.0.1:' + port + ' has no valid port');
    }
    expect(problems({ REDIS_SENTINELS: '10.0.0.1:26379', REDIS_SENTINEL_NAME: 'in take' })).toContain(
      'REDIS_SENTINEL_NAME',
    );
  });
});
