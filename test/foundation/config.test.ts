import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../core/platform/config.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const VALID = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  MONGODB_URI: 'mongodb://127.0.0.1:27017/intake',
  ADMIN_API_KEY: 'adm_0123456789abcdefghijklmnop',
  SESSION_SECRET: '0123456789abcdef0123456789abcdef',
};

/** The problems loadConfig reports for an environment (it must throw ConfigError). */
function problems(env: Record<string, string | undefined>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig', () => {
  it('accepts a minimal valid environment and applies the defaults', () => {
    const config = loadConfig(VALID);
    expect(config).toMatchObject({
      redisUrl: VALID.REDIS_URL,
      mongodbUri: VALID.MONGODB_URI,
      port: 3000,
      publicBaseUrl: 'http://127.0.0.1:3000',
      voiceProvider: 'simulator',
    });
  });

  it('accepts rediss:// (TLS) for REDIS_URL', () => {
    expect(loadConfig({ ...VALID, REDIS_URL: 'rediss://user:pw@redis.example.com:6380' }).redisUrl).toBe(
      'rediss://user:pw@redis.example.com:6380',
    );
  });

  it.each([
    ['REDIS_URL missing', { REDIS_URL: undefined }, 'REDIS_URL'],
    ['REDIS_URL blank', { REDIS_URL: '  ' }, 'REDIS_URL'],
    ['REDIS_URL with http://', { REDIS_URL: 'http://127.0.0.1:6379' }, 'REDIS_URL'],
    ['REDIS_URL not a URL', { REDIS_URL: 'localhost' }, 'REDIS_URL'],
    ['MONGODB_URI missing', { MONGODB_URI: undefined }, 'MONGODB_URI'],
    ['MONGODB_URI with postgres://', { MONGODB_URI: 'postgres://127.0.0.1/x' }, 'MONGODB_URI'],
    ['ADMIN_API_KEY missing', { ADMIN_API_KEY: undefined }, 'ADMIN_API_KEY'],
    ['ADMIN_API_KEY too short', { ADMIN_API_KEY: 'short' }, 'ADMIN_API_KEY'],
    ['SESSION_SECRET missing', { SESSION_SECRET: undefined }, 'SESSION_SECRET'],
    ['SESSION_SECRET too short', { SESSION_SECRET: 'only-twenty-chars-xx' }, 'SESSION_SECRET'],
    ['PORT=abc', { PORT: 'abc' }, 'PORT'],
    ['PORT out of range', { PORT: '70000' }, 'PORT'],
    ['PUBLIC_BASE_URL with ftp://', { PUBLIC_BASE_URL: 'ftp://example.com' }, 'PUBLIC_BASE_URL'],
    ['VOICE_PROVIDER unknown', { VOICE_PROVIDER: 'twilio' }, 'VOICE_PROVIDER'],
    ['VOICE_PROVIDER=retell without RETELL_API_KEY', { VOICE_PROVIDER: 'retell' }, 'RETELL_API_KEY'],
    ['OPENAI_BASE_URL not a URL', { OPENAI_BASE_URL: 'not a url' }, 'OPENAI_BASE_URL'],
    ['SMTP_URL with http://', { SMTP_URL: 'http://mail.example.com' }, 'SMTP_URL'],
    ['RATE_LIMIT_PER_MINUTE=0', { RATE_LIMIT_PER_MINUTE: '0' }, 'RATE_LIMIT_PER_MINUTE'],
  ])('rejects %s, naming the variable', (_what, change, name) => {
    const found = problems({ ...VALID, ...change });
    expect(found).toHaveLength(1);
    expect(found[0]).toContain(name);
  });

  it('accepts VOICE_PROVIDER=retell with RETELL_API_KEY', () => {
    expect(loadConfig({ ...VALID, VOICE_PROVIDER: 'retell', RETELL_API_KEY: 'key_x' }).voiceProvider).toBe(
      'retell',
    );
  });

  it('names every bad variable at once', () => {
    const found = problems({ PORT: 'abc', SESSION_SECRET: 'short' });
    for (const name of ['REDIS_URL', 'MONGODB_URI', 'ADMIN_API_KEY', 'SESSION_SECRET', 'PORT']) {
      expect(found.some((p) => p.includes(name))).toBe(true);
    }
    expect(found).toHaveLength(5);
  });
});

/** Runs a process entry as the Procfile would (through tsx), with exactly the given environment. */
function runEntry(
  entry: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', entry],
      { cwd: root, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, timeout: 80_000 },
      (_err, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
    );
  });
}

// Each spawn loads TypeScript through tsx: a few seconds on a busy 2-core machine.
describe('process entries stop on a bad environment', { timeout: 90_000 }, () => {
  const { REDIS_URL: _omitted, ...withoutRedis } = VALID;

  it.each(['api/server.ts', 'workers/main.ts', 'core/platform/db/release.ts'])(
    '%s without REDIS_URL exits with code 1 naming REDIS_URL',
    async (entry) => {
      const { code, stderr } = await runEntry(entry, withoutRedis);
      expect(stderr).toContain('REDIS_URL');
      expect(code).toBe(1);
    },
  );

  it('api/server.ts with PORT=abc exits with code 1 naming PORT', async () => {
    const { code, stderr } = await runEntry('api/server.ts', { ...VALID, PORT: 'abc' });
    expect(stderr).toMatch(/\bPORT\b/);
    expect(code).toBe(1);
  });
});
