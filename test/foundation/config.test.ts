import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../core/platform/config.js';
import { entryArgs } from '../../scripts/local/compiled.js';
import { DECLARED } from '../../core/platform/config/parse.js';
import { createMongo } from '../../core/platform/db/mongo.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const VALID = {
  REDIS_URL: 'redis://127.0.0.1:6379',
  MONGODB_URI: 'mongodb://127.0.0.1:27017/intake',
  ADMIN_API_KEY: 'adm_0123456789abcdefghijklmnop',
  SESSION_SECRET: '0123456789abcdef0123456789abcdef',
  SECRETS_KEY: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
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

  it('accepts a replica set of several hosts with ports, mongodb+srv, and MAIL_FROM with or without a name', () => {
    for (const uri of [
      'mongodb://h1.example.net:27017,h2.example.net:27017,h3.example.net:27017/intake?replicaSet=rs0&tls=true',
      'mongodb://user:p%40ss@h1,h2/intake?authSource=admin',
      'mongodb+srv://user:pw@c0.example.net/intake?retryWrites=true&w=majority',
    ]) {
      expect(loadConfig({ ...VALID, MONGODB_URI: uri }).mongodbUri).toBe(uri);
    }
    for (const from of ['no-reply@firm.example', 'Smith & Partners <intake@smith.example>']) {
      expect(loadConfig({ ...VALID, MAIL_FROM: from }).mailFrom).toBe(from);
    }
    // Never the string (it may hold a password).
    const [problem] = problems({ ...VALID, MONGODB_URI: 'mongodb+srv://u:secretpw@c0.example.net:27017/x' });
    expect(problem).toContain('MONGODB_URI');
    expect(problem).not.toContain('secretpw');
    // An option the driver refuses: the client is not made, a ConfigError names the variable.
    const bad = 'mongodb://u:secretpw@h1/intake?retryWrites=maybe';
    expect(loadConfig({ ...VALID, MONGODB_URI: bad }).mongodbUri).toBe(bad);
    let refused: unknown;
    try {
      createMongo(bad);
    } catch (err) {
      refused = err;
    }
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).problems[0]).toMatch(/^MONGODB_URI must be/);
    expect((refused as ConfigError).message).not.toContain('secretpw');
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
    ['CLIO_CLIENT_ID without CLIO_CLIENT_SECRET', { CLIO_CLIENT_ID: 'cid' }, 'CLIO_CLIENT_SECRET'],
    ['CLIO_CLIENT_SECRET without CLIO_CLIENT_ID', { CLIO_CLIENT_SECRET: 'cs' }, 'CLIO_CLIENT_ID'],
    ['OPENAI_BASE_URL not a URL', { OPENAI_BASE_URL: 'not a url' }, 'OPENAI_BASE_URL'],
    ['SMTP_URL with http://', { SMTP_URL: 'http://mail.example.com' }, 'SMTP_URL'],
    ['RATE_LIMIT_PER_MINUTE=0', { RATE_LIMIT_PER_MINUTE: '0' }, 'RATE_LIMIT_PER_MINUTE'],
    ['PORT=1e3', { PORT: '1e3' }, 'PORT'],
    ['TRUST_PROXY=yes', { TRUST_PROXY: 'yes' }, 'TRUST_PROXY'],
    ['ALLOW_PRIVATE_URLS=TRUE', { ALLOW_PRIVATE_URLS: 'TRUE' }, 'ALLOW_PRIVATE_URLS'],
    ['LOG_LEVEL unknown', { LOG_LEVEL: 'verbose' }, 'LOG_LEVEL'],
    ['WORKER_QUEUES with a bad name', { WORKER_QUEUES: 'calls,Bad Name' }, 'WORKER_QUEUES'],
    ['WORKER_QUEUES only commas', { WORKER_QUEUES: ',,' }, 'WORKER_QUEUES'],
    ['APP_ENV with markup', { APP_ENV: '<b>prod</b>' }, 'APP_ENV'],
    ['NODE_ENV (APP_ENV fallback) with markup', { NODE_ENV: 'prod env' }, 'APP_ENV'],
    ['REDIS_URL with no host', { REDIS_URL: 'redis://' }, 'REDIS_URL'],
    ['SMTP_URL with no host', { SMTP_URL: 'smtp://' }, 'SMTP_URL'],
    [
      'MONGODB_URI srv with a port',
      { MONGODB_URI: 'mongodb+srv://c0.example.net:27017/intake' },
      'MONGODB_URI',
    ],
    ['MONGODB_URI with no host', { MONGODB_URI: 'mongodb://' }, 'MONGODB_URI'],
    ['MAIL_FROM with no address', { MAIL_FROM: 'intake' }, 'MAIL_FROM'],
    ['MAIL_FROM with an address of no domain', { MAIL_FROM: 'Intake <no-reply@localhost>' }, 'MAIL_FROM'],
    [
      'ADMIN_READONLY_API_KEY equal to ADMIN_API_KEY',
      { ADMIN_READONLY_API_KEY: VALID.ADMIN_API_KEY },
      'ADMIN_READONLY_API_KEY',
    ],
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

  it('accepts CLIO_CLIENT_ID with CLIO_CLIENT_SECRET (both or neither)', () => {
    const config = loadConfig({ ...VALID, CLIO_CLIENT_ID: 'cid', CLIO_CLIENT_SECRET: 'cs' });
    expect([config.clioClientId, config.clioClientSecret]).toEqual(['cid', 'cs']);
  });

  it('reads every boolean with one parser: true, false, 1 or 0', () => {
    for (const [spelling, value] of [
      ['true', true],
      ['1', true],
      ['false', false],
      ['0', false],
    ] as const) {
      const config = loadConfig({ ...VALID, TRUST_PROXY: spelling, ALLOW_PRIVATE_URLS: spelling });
      expect([config.trustProxy, config.allowPrivateUrls]).toEqual([value, value]);
    }
    expect(loadConfig(VALID)).toMatchObject({ trustProxy: false, allowPrivateUrls: false });
  });

  it('reads integers, lists and base URLs', () => {
    const config = loadConfig({
      ...VALID,
      PORT: ' 8080 ',
      WORKER_QUEUES: 'calls, simulator,,calls',
      RETELL_BASE_URL: 'https://retell.example.com//',
    });
    expect(config).toMatchObject({
      port: 8080,
      publicBaseUrl: 'http://127.0.0.1:8080',
      workerQueues: ['calls', 'simulator'],
      retellBaseUrl: 'https://retell.example.com',
    });
    expect(loadConfig(VALID).workerQueues).toBeUndefined();
  });

  it('never echoes a key, a secret or a URL in a message', () => {
    const found = problems({
      ...VALID,
      ADMIN_API_KEY: 'secret-admin',
      SESSION_SECRET: 'secret-session',
      REDIS_URL: 'http://user:secret-password@redis.example.com',
    });
    expect(found).toHaveLength(3);
    expect(found.join('\n')).not.toContain('secret-');
  });

  it('declares each variable once, under one name', () => {
    const names = DECLARED.map((d) => d.variable.name);
    expect(new Set(names).size).toBe(names.length);
    for (const { variable } of DECLARED) {
      expect(variable.name).toMatch(/^[A-Z][A-Z0-9_]*$/);
      expect(variable.description.length).toBeGreaterThan(0);
      // The cross-variable rules name variables that exist.
      for (const other of [variable.requiredWhen?.name, variable.differsFrom]) {
        if (other !== undefined) expect(names).toContain(other);
      }
    }
  });

  it('names every bad variable at once', () => {
    const found = problems({ PORT: 'abc', SESSION_SECRET: 'short' });
    for (const name of [
      'REDIS_URL',
      'MONGODB_URI',
      'ADMIN_API_KEY',
      'SESSION_SECRET',
      'SECRETS_KEY',
      'PORT',
    ]) {
      expect(found.some((p) => p.includes(name))).toBe(true);
    }
    expect(found).toHaveLength(6);
  });
});

/** Runs a process entry as the Procfile would (compiled, or through tsx), with exactly the given environment. */
function runEntry(
  entry: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      entryArgs(entry),
      { cwd: root, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, timeout: 80_000 },
      (_err, _stdout, stderr) => resolve({ code: child.exitCode, stderr }),
    );
  });
}

// Each spawn loads the service: a few seconds on a busy 2-core machine.
describe('process entries stop on a bad environment', () => {
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
