// The one place that reads the environment. Every process parses it once at start and
// stops with exit code 1 and a message naming each bad variable (see exitOnConfigError).

import type { UrlPolicy } from './url-policy.js';

type VoiceProviderName = 'simulator' | 'retell';

export interface Config {
  redisUrl: string;
  mongodbUri: string;
  adminApiKey: string;
  /** ADMIN_READONLY_API_KEY: an operator key that may only look at Bull Board (no retry, clean, ...). */
  adminReadonlyApiKey: string | undefined;
  /** APP_ENV (else NODE_ENV, else "development"): the environment's name, shown on the dashboard. */
  appEnv: string;
  sessionSecret: string;
  port: number;
  publicBaseUrl: string;
  voiceProvider: VoiceProviderName;
  retellApiKey: string | undefined;
  retellBaseUrl: string;
  openaiApiKey: string | undefined;
  openaiBaseUrl: string | undefined;
  openaiModel: string;
  smtpUrl: string | undefined;
  mailFrom: string;
  clioBaseUrl: string;
  /**
   * ALLOW_PRIVATE_URLS=true: URLs the service calls for a firm (Slack, Clio) may be http:// and
   * loopback or private hosts. For local runs and tests only; false unless set.
   */
  allowPrivateUrls: boolean;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Requests per principal (firm + subject) per minute. */
  rateLimitPerMinute: number;
  /** Webhook deliveries per firm per minute (both receivers). */
  webhookRateLimitPerMinute: number;
  /** Unauthenticated requests (answered 401) per client address per minute. */
  unauthenticatedRateLimitPerMinute: number;
  /** Behind a proxy (Heroku's router): the client address is the last X-Forwarded-For entry. */
  trustProxy: boolean;
  simCallMs: number;
  shutdownTimeoutMs: number;
  /** BullMQ job lock (and stalled-job check interval): how soon a crashed worker's job is taken over. */
  jobLockMs: number;
  workerConcurrency: number;
  /** Prefix of every BullMQ key, so that several deployments can share one Redis. */
  queuePrefix: string;
  /** Queues this worker process consumes (WORKER_QUEUES); undefined: every queue. */
  workerQueues: string[] | undefined;
  /** How long after a campaign call that was not_connected its lead is called again (at least). */
  campaignRetryDelayMs: number;
  /** Lead entries a campaign fan-out reads and adds per addBulk (and per checkpoint). */
  campaignFanoutChunk: number;
  /** How long a dial slot (pacing) is held without its call's end event before it frees itself. */
  dialSlotLeaseMs: number;
  /** How long POST /api/contacts/import waits for its job before answering 202 (CONTACTS_IMPORT_WAIT_MS). */
  contactsImportWaitMs: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  required(name: string, what: string): string {
    const value = this.raw(name);
    if (value === undefined) this.problems.push(`${name} is missing: ${what}`);
    return value ?? '';
  }

  optional(name: string): string | undefined {
    return this.raw(name);
  }

  url(name: string, what: string, protocols: string[], fallback?: string): string {
    const value = fallback === undefined ? this.required(name, what) : (this.raw(name) ?? fallback);
    if (value === '') return value;
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) {
        this.problems.push(`${name} must use ${protocols.join(' or ')} (got "${parsed.protocol}")`);
      }
    } catch {
      this.problems.push(`${name} is not a valid URL: ${what}`);
    }
    return value;
  }

  optionalUrl(name: string, protocols: string[]): string | undefined {
    return this.raw(name) === undefined ? undefined : this.url(name, 'a URL', protocols);
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${value}")`);
      return fallback;
    }
    return n;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(value)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got "${value}")`);
      return fallback;
    }
    return value as T;
  }

  bool(name: string, fallback: boolean): boolean {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (value === 'true') return true;
    if (value === 'false') return false;
    this.problems.push(`${name} must be true or false (got "${value.slice(0, 100)}")`);
    return fallback;
  }

  list(name: string, itemPattern: RegExp): string[] | undefined {
    const value = this.raw(name);
    if (value === undefined) return undefined;
    const items = value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    const bad = items.filter((item) => !itemPattern.test(item));
    if (items.length === 0 || bad.length > 0) {
      this.problems.push(`${name} must be a comma-separated list of names (got "${value.slice(0, 100)}")`);
      return undefined;
    }
    return [...new Set(items)];
  }

  minLength(name: string, value: string, length: number): void {
    if (value !== '' && value.length < length) {
      this.problems.push(`${name} must be at least ${length} characters long`);
    }
  }
}

export function loadConfig(env: Env): Config {
  const r = new Reader(env);
  const redisUrl = r.url('REDIS_URL', 'the Redis URL, e.g. redis://127.0.0.1:6379', ['redis:', 'rediss:']);
  const mongodbUri = r.url('MONGODB_URI', 'the MongoDB URI, e.g. mongodb://127.0.0.1:27017/intake', [
    'mongodb:',
    'mongodb+srv:',
  ]);
  const adminApiKey = r.required('ADMIN_API_KEY', 'the platform API key (at least 24 characters)');
  r.minLength('ADMIN_API_KEY', adminApiKey, 24);
  const adminReadonlyApiKey = r.optional('ADMIN_READONLY_API_KEY');
  if (adminReadonlyApiKey !== undefined) {
    r.minLength('ADMIN_READONLY_API_KEY', adminReadonlyApiKey, 24);
    if (adminReadonlyApiKey === adminApiKey) {
      r.problems.push('ADMIN_READONLY_API_KEY must differ from ADMIN_API_KEY');
    }
  }
  const appEnv = r.optional('APP_ENV') ?? r.optional('NODE_ENV') ?? 'development';
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$/.test(appEnv)) {
    r.problems.push(
      `APP_ENV (or NODE_ENV) must be a name of 1 to 32 letters, digits, ".", "_" or "-" (got "${appEnv.slice(0, 100)}")`,
    );
  }
  const sessionSecret = r.required(
    'SESSION_SECRET',
    'the HS256 secret for session JWTs (at least 32 characters)',
  );
  r.minLength('SESSION_SECRET', sessionSecret, 32);
  const port = r.int('PORT', 3000, 0, 65535);
  const publicBaseUrl = r
    .url(
      'PUBLIC_BASE_URL',
      'the public base URL of this service',
      ['http:', 'https:'],
      `http://127.0.0.1:${port}`,
    )
    .replace(/\/+$/, '');
  const voiceProvider = r.oneOf('VOICE_PROVIDER', ['simulator', 'retell'] as const, 'simulator');
  const retellApiKey = r.optional('RETELL_API_KEY');
  if (voiceProvider === 'retell' && retellApiKey === undefined) {
    r.problems.push('RETELL_API_KEY is missing: it is required when VOICE_PROVIDER=retell');
  }
  const retellBaseUrl = r
    .url('RETELL_BASE_URL', 'the Retell API base URL', ['http:', 'https:'], 'https://api.retellai.com')
    .replace(/\/+$/, '');
  const openaiApiKey = r.optional('OPENAI_API_KEY');
  const openaiBaseUrl = r.optionalUrl('OPENAI_BASE_URL', ['http:', 'https:']);
  const smtpUrl = r.optionalUrl('SMTP_URL', ['smtp:', 'smtps:']);
  const clioBaseUrl = r
    .url('CLIO_BASE_URL', 'the Clio API base URL', ['http:', 'https:'], 'https://app.clio.com')
    .replace(/\/+$/, '');
  const config: Config = {
    redisUrl,
    mongodbUri,
    adminApiKey,
    adminReadonlyApiKey,
    appEnv,
    sessionSecret,
    port,
    publicBaseUrl,
    voiceProvider,
    retellApiKey,
    retellBaseUrl,
    openaiApiKey,
    openaiBaseUrl,
    openaiModel: r.optional('OPENAI_MODEL') ?? 'gpt-4o-mini',
    smtpUrl,
    mailFrom: r.optional('MAIL_FROM') ?? 'Intake Service <no-reply@intake.invalid>',
    clioBaseUrl,
    allowPrivateUrls: r.bool('ALLOW_PRIVATE_URLS', false),
    logLevel: r.oneOf(
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      'info',
    ),
    rateLimitPerMinute: r.int('RATE_LIMIT_PER_MINUTE', 1200, 1, 1_000_000),
    webhookRateLimitPerMinute: r.int('WEBHOOK_RATE_LIMIT_PER_MINUTE', 6000, 1, 10_000_000),
    unauthenticatedRateLimitPerMinute: r.int('UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE', 600, 1, 1_000_000),
    trustProxy: r.oneOf('TRUST_PROXY', ['true', 'false'] as const, 'false') === 'true',
    simCallMs: r.int('SIM_CALL_MS', 2000, 0, 600_000),
    shutdownTimeoutMs: r.int('SHUTDOWN_TIMEOUT_MS', 25_000, 1000, 120_000),
    jobLockMs: r.int('JOB_LOCK_MS', 30_000, 1000, 600_000),
    workerConcurrency: r.int('WORKER_CONCURRENCY', 10, 1, 500),
    queuePrefix: r.optional('QUEUE_PREFIX') ?? 'bull',
    workerQueues: r.list('WORKER_QUEUES', /^[a-z][a-z0-9-]{0,62}$/),
    campaignRetryDelayMs: r.int('CAMPAIGN_RETRY_DELAY_MS', 3_600_000, 0, 7 * 24 * 3_600_000),
    campaignFanoutChunk: r.int('CAMPAIGN_FANOUT_CHUNK', 500, 1, 5000),
    dialSlotLeaseMs: r.int('DIAL_SLOT_LEASE_MS', 3_900_000, 1000, 24 * 3_600_000),
    contactsImportWaitMs: r.int('CONTACTS_IMPORT_WAIT_MS', 25_000, 0, 60_000),
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return config;
}

/** The URL policy (core/platform/url-policy.ts) this configuration asks for. */
export function urlPolicyOf(config: Pick<Config, 'allowPrivateUrls'>): UrlPolicy {
  return { allowPrivate: config.allowPrivateUrls };
}

/** Runs `read`; a ConfigError ends the process with exit code 1 and its message. */
export function exitOnConfigError<T>(read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

/** Entry points call this: a bad environment ends the process with exit code 1. */
export function loadConfigOrExit(env: Env = process.env): Config {
  return exitOnConfigError(() => loadConfig(env));
}
