// Every environment variable the service reads, declared once: the Config type (Static<>), the
// parser (parse.ts) and the configuration table of docs/configuration.md (`npm run docs:config`)
// all come from here. Adding a variable is adding one entry; then run `npm run docs:config`.
import { Type, type Static } from '@sinclair/typebox';
import {
  boolean,
  hoursRange,
  integer,
  key32,
  key32List,
  list,
  oneOf,
  optional,
  secret,
  mongoUri,
  text,
  url,
} from './variables.js';
import { ORIGIN_PATTERN } from '../origins.js';

const local = { start: 'local', test: 'local' };
const generated = { start: 'generated', test: 'generated' };
const HOUR_MS = 3_600_000;

export const CONFIG_SCHEMA = Type.Object({
  redisUrl: url('REDIS_URL', {
    protocols: ['redis:', 'rediss:'],
    local,
    description: 'Redis for the queues and the rate limit; `rediss://` for TLS',
  }),
  redisCluster: boolean('REDIS_CLUSTER', {
    default: false,
    description: '`REDIS_URL` is a node of a Redis Cluster: keys used together get hash tags (docs/redis.md)',
  }),
  redisTlsCa: optional(
    text('REDIS_TLS_CA', {
      description:
        "CA certificate a `rediss://` server's must chain to (Heroku Redis signs its own): PEM text or a PEM file's path; the host name is checked too (docs/redis.md)",
    }),
  ),
  redisTlsRejectUnauthorized: boolean('REDIS_TLS_REJECT_UNAUTHORIZED', {
    default: true,
    description:
      '`false`: `rediss://` accepts any certificate (encrypted, server not authenticated; Heroku documents it), with a warning at start; prefer `REDIS_TLS_CA`',
  }),
  redisSentinels: optional(
    list('REDIS_SENTINELS', {
      item: '^[A-Za-z0-9.-]+:[0-9]{1,5}$',
      itemText: '`host:port` of Redis Sentinels',
      requiredWith: 'REDIS_SENTINEL_NAME',
      description:
        'Sentinels that name the Redis primary (a failover is followed); `REDIS_URL` then gives only password, database and `rediss://` (docs/redis.md)',
    }),
  ),
  redisSentinelName: optional(
    text('REDIS_SENTINEL_NAME', {
      pattern: '^[A-Za-z0-9._-]{1,64}$',
      patternText: 'the name a `sentinel monitor` line gives the primary',
      requiredWith: 'REDIS_SENTINELS',
      description: 'the name of the primary the Sentinels of `REDIS_SENTINELS` monitor',
    }),
  ),
  mongodbUri: mongoUri('MONGODB_URI', {
    local,
    description: "MongoDB; the database is the URI's path, else `intake`",
  }),
  adminApiKey: secret('ADMIN_API_KEY', { minLength: 24, local: generated, description: 'the platform key' }),
  adminReadonlyApiKey: optional(
    secret('ADMIN_READONLY_API_KEY', {
      minLength: 24,
      differsFrom: 'ADMIN_API_KEY',
      description: 'an operator key that may only look at Bull Board (no retry, clean, remove, ...: `403`)',
    }),
  ),
  appEnv: text('APP_ENV', {
    pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$',
    patternText: 'a name of 1 to 32 letters, digits, ".", "_" or "-"',
    fallback: { text: '`NODE_ENV`, else `development`', value: (env) => env('NODE_ENV') ?? 'development' },
    description: "the environment's name, shown on Bull Board (red for `prod…`, amber for `stag…`)",
  }),
  sessionSecret: secret('SESSION_SECRET', {
    minLength: 32,
    local: generated,
    description: 'HS256 secret of session JWTs',
  }),
  secretsKey: key32('SECRETS_KEY', {
    local: { start: 'generated once, kept in `.local/secrets-key`', test: 'generated' },
    description:
      "the master key of the firms' stored secrets (Clio tokens, Cal.com keys, webhook secrets): it wraps each firm's data key; every process needs the same one, and without it none starts (docs/operations.md#secrets-at-rest)",
  }),
  secretsKeyPrevious: optional(
    key32List('SECRETS_KEY_PREVIOUS', {
      description:
        'master keys that still open what they wrapped while `SECRETS_KEY` is rotated; `release` wraps everything with `SECRETS_KEY` again, then they can go (docs/operations.md#rotating-secrets_key)',
    }),
  ),
  port: integer('PORT', {
    min: 0,
    max: 65535,
    default: 3000,
    local: { start: '`3000` if free, else any free port', test: 'a free port' },
    description: 'HTTP port of the web process (`0`: any free port)',
  }),
  publicBaseUrl: url('PUBLIC_BASE_URL', {
    protocols: ['http:', 'https:'],
    base: true,
    fallback: {
      text: '`http://127.0.0.1:$PORT`',
      value: (_env, config) => `http://127.0.0.1:${config.port}`,
    },
    description: 'how the outside reaches this service (webhook URLs, the OpenAPI `servers` entry)',
  }),
  voiceProvider: oneOf('VOICE_PROVIDER', ['simulator', 'retell'], {
    default: 'simulator',
    description: '`simulator` (built in, no account) or `retell`',
  }),
  retellApiKey: optional(
    secret('RETELL_API_KEY', {
      minLength: 1,
      requiredWhen: { name: 'VOICE_PROVIDER', equals: 'retell' },
      description: 'Retell API key',
    }),
  ),
  retellBaseUrl: url('RETELL_BASE_URL', {
    protocols: ['http:', 'https:'],
    base: true,
    default: 'https://api.retellai.com',
    description: 'Retell API base URL',
  }),
  openaiApiKey: optional(
    secret('OPENAI_API_KEY', {
      minLength: 1,
      description:
        'enables the LLM chat engine and OpenAI extraction of analysed calls; without it the built-in intake agent and extractor work',
    }),
  ),
  openaiBaseUrl: optional(
    url('OPENAI_BASE_URL', {
      protocols: ['http:', 'https:'],
      description: 'an OpenAI-compatible base URL; unset: the OpenAI API',
    }),
  ),
  openaiDailyCharsPerFirm: integer('OPENAI_DAILY_CHARS_PER_FIRM', {
    min: 0,
    max: 1_000_000_000_000,
    default: 5_000_000,
    description:
      "characters one firm's extractions may send to OpenAI per UTC day (the call pipeline and `POST /api/utils/extract`), unless the firm's `openai_daily_char_budget` says otherwise; past it the deterministic extractor answers (docs/extract.md#budget)",
  }),
  openaiModel: text('OPENAI_MODEL', { default: 'gpt-4o-mini', description: 'model of the LLM chat engine' }),
  smtpUrl: optional(
    url('SMTP_URL', {
      protocols: ['smtp:', 'smtps:'],
      description: 'the mail server for notifications and reminders; unset: no email is sent',
    }),
  ),
  smtpSendTimeoutMs: integer('SMTP_SEND_TIMEOUT_MS', {
    min: 1000,
    max: 300_000,
    default: 30_000,
    description:
      "the longest one mail's SMTP exchange may take, connection to the server's answer, before it is abandoned: a workflow's mail holds its effect's lease this much longer than `EFFECT_LEASE_MS`, so no other attempt sends it while it may still be going out",
  }),
  mailFrom: text('MAIL_FROM', {
    default: 'Intake Service <no-reply@intake.invalid>',
    pattern: '^(?:[^<>@]*<[^\\s<>@]+@[^\\s<>@]+\\.[^\\s<>@]+>|[^\\s<>@]+@[^\\s<>@]+\\.[^\\s<>@]+)$',
    patternText: 'an email address, alone or as `Name <address>`',
    description: 'sender of notification and reminder emails',
  }),
  clioBaseUrl: url('CLIO_BASE_URL', {
    protocols: ['http:', 'https:'],
    base: true,
    default: 'https://app.clio.com',
    description: 'Clio base URL (API, OAuth) of region `us`; any other value replaces every region (tests)',
  }),
  clioClientId: optional(
    text('CLIO_CLIENT_ID', {
      requiredWith: 'CLIO_CLIENT_SECRET',
      description:
        "Clio app's client id: firms connect with OAuth; redirect URL `PUBLIC_BASE_URL/api/integrations/clio/callback`",
    }),
  ),
  clioClientSecret: optional(
    secret('CLIO_CLIENT_SECRET', {
      minLength: 1,
      requiredWith: 'CLIO_CLIENT_ID',
      description: "the Clio developer application's client secret",
    }),
  ),
  ringcentralServer: url('RINGCENTRAL_SERVER', {
    protocols: ['http:', 'https:'],
    base: true,
    default: 'https://platform.ringcentral.com',
    description:
      'RingCentral platform base URL (API, OAuth): `https://platform.ringcentral.com` (production) or `https://platform.devtest.ringcentral.com` (sandbox); tests point it at a local RingCentral',
  }),
  ringcentralClientId: optional(
    text('RINGCENTRAL_CLIENT_ID', {
      requiredWith: 'RINGCENTRAL_CLIENT_SECRET',
      description:
        "RingCentral app's client id: firms connect their phone system with OAuth; redirect URL `PUBLIC_BASE_URL/api/integrations/ringcentral/callback`",
    }),
  ),
  ringcentralClientSecret: optional(
    secret('RINGCENTRAL_CLIENT_SECRET', {
      minLength: 1,
      requiredWith: 'RINGCENTRAL_CLIENT_ID',
      description: "the RingCentral app's client secret",
    }),
  ),
  ringcentralSubscriptionCheckMs: integer('RINGCENTRAL_SUBSCRIPTION_CHECK_MS', {
    default: 300_000,
    min: 100,
    max: 86_400_000,
    description:
      "How often each firm's RingCentral webhook subscription is checked: renewed when it would lapse before the next check, made again when RingCentral dropped it",
  }),
  allowPrivateUrls: boolean('ALLOW_PRIVATE_URLS', {
    default: false,
    local: { start: '`true`', test: '`true`' },
    description:
      'URLs the service calls for a firm (Slack, Clio, Cal.com, webhook endpoints) may be `http://` and loopback hosts (`localhost`, 127.0.0.0/8, `::1`); every other non-public address (private, link-local, metadata) stays refused; for local runs and tests only',
  }),
  logLevel: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info',
    local: { test: '`TEST_LOG_LEVEL`, else `silent`' },
    description: 'pino JSON logs on stdout',
  }),
  rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', {
    min: 1,
    max: 1_000_000,
    default: 1200,
    description:
      "requests per principal (firm + subject; a firm's widget tokens are one) in any minute, kept in Redis and shared by every web process (`429`)",
  }),
  webhookRateLimitPerMinute: integer('WEBHOOK_RATE_LIMIT_PER_MINUTE', {
    min: 1,
    max: 10_000_000,
    default: 6000,
    description:
      'verified webhook deliveries (bearer token, or a signature that matched the body) per firm in any minute, both receivers (`429`)',
  }),
  unauthenticatedRateLimitPerMinute: integer('UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE', {
    min: 1,
    max: 1_000_000,
    default: 600,
    description:
      'requests answered `401` per client address in any minute; past it the address gets `429` before any lookup until its sliding window lets one in again',
  }),
  openRouteRateLimitPerMinute: integer('OPEN_ROUTE_RATE_LIMIT_PER_MINUTE', {
    min: 1,
    max: 1_000_000,
    default: 120,
    description:
      'requests per client address (an IPv6 address counts as its /64) in any minute to the routes that take no token: the widget session and challenge, the Clio callback (`429`)',
  }),
  widgetSessionRateLimitPerMinute: integer('WIDGET_SESSION_RATE_LIMIT_PER_MINUTE', {
    min: 1,
    max: 1_000_000,
    default: 60,
    description:
      "requests of one widget token (one visitor's session) in any minute, counted before the firm's widget shares `RATE_LIMIT_PER_MINUTE` (`429`)",
  }),
  widgetAddressRateLimitPerMinute: integer('WIDGET_ADDRESS_RATE_LIMIT_PER_MINUTE', {
    min: 1,
    max: 1_000_000,
    default: 120,
    description:
      "widget-token requests from one client address to one firm in any minute, all its sessions together, counted before the firm's widget bucket (`429`)",
  }),
  widgetMessagesPerSession: integer('WIDGET_MESSAGES_PER_SESSION', {
    min: 1,
    max: 10_000_000,
    default: 200,
    description:
      "chat messages one widget token may send (it lives an hour), counted before the firm's `widget_daily_message_cap` (`429`)",
  }),
  widgetMessagesPerAddressPerDay: integer('WIDGET_MESSAGES_PER_ADDRESS_PER_DAY', {
    min: 1,
    max: 10_000_000,
    default: 500,
    description:
      "widget chat messages from one client address to one firm per UTC day, all its sessions together, counted before the firm's `widget_daily_message_cap` (`429`)",
  }),
  widgetDailyBookingCap: integer('WIDGET_DAILY_BOOKING_CAP', {
    min: 0,
    max: 1_000_000,
    default: 20,
    description:
      "consultations a firm's widget chats may book per UTC day, all visitors together, unless the firm's `widget_daily_booking_cap` says otherwise (docs/widget.md#bookings)",
  }),
  webhookBodyBudgetBytes: integer('WEBHOOK_BODY_BUDGET_BYTES', {
    min: 1024 * 1024,
    max: 2 ** 34,
    default: 48 * 1024 * 1024,
    description:
      'bytes of large call-webhook bodies one web process reads at once (a delivery that finds no room within 5 s: `503`); a body larger than this counts as this',
  }),
  webhookBodyBudgetPerFirmBytes: integer('WEBHOOK_BODY_BUDGET_PER_FIRM_BYTES', {
    min: 1024 * 1024,
    max: 2 ** 34,
    default: 32 * 1024 * 1024,
    description:
      "one firm's share of `WEBHOOK_BODY_BUDGET_BYTES` for its proven deliveries (a bearer token, or a signature from an address that proved itself to the firm; they hold no more; a body larger than the share takes all of it); keep it below the budget so other firms find room",
  }),
  webhookBodyBudgetUnprovenBytes: integer('WEBHOOK_BODY_BUDGET_UNPROVEN_BYTES', {
    min: 1024 * 1024,
    max: 2 ** 34,
    default: 16 * 1024 * 1024,
    description:
      "bytes of `WEBHOOK_BODY_BUDGET_BYTES` that unproven deliveries hold together: signed ones from an address that has not delivered a matching signature to that firm within 24 h (a forgery, or a sender's first delivery); keep it at most the budget less one firm's share, so a proven sender always finds its share",
  }),
  webhookBodyMinBytesPerSecond: integer('WEBHOOK_BODY_MIN_BYTES_PER_SECOND', {
    min: 1,
    max: 2 ** 30,
    default: 128 * 1024,
    description:
      'the slowest a call-webhook body may arrive, from a second after its read began: a sender that falls behind is answered `408` and its room given back',
  }),
  webhookOutboxMaxBytes: integer('WEBHOOK_OUTBOX_MAX_BYTES', {
    min: 1024,
    max: 2 ** 40,
    default: 256 * 1024 * 1024,
    description:
      'bytes of deliveries the MongoDB webhook outbox may hold while Redis is down (payload JSON); past it the receivers answer `503` with `Retry-After`',
  }),
  webhookOutboxMaxBytesPerFirm: integer('WEBHOOK_OUTBOX_MAX_BYTES_PER_FIRM', {
    min: 1024,
    max: 2 ** 40,
    default: 32 * 1024 * 1024,
    description: "one firm's share of `WEBHOOK_OUTBOX_MAX_BYTES`; past it that firm's deliveries get `503`",
  }),
  widgetSessionsPerAddressPerHour: integer('WIDGET_SESSIONS_PER_ADDRESS_PER_HOUR', {
    min: 1,
    max: 1_000_000,
    default: 20,
    description:
      'widget sessions (`POST /api/widget/session`) one client address may open with one widget key per clock hour (`429`)',
  }),
  corsOrigins: optional(
    list('CORS_ORIGINS', {
      item: ORIGIN_PATTERN,
      itemText: 'exact origins (`scheme://host[:port]`)',
      description:
        "pages on these origins (a firm's dashboard) may call every API route with `Authorization`; never credentials; unset: no CORS outside the widget routes",
    }),
  ),
  trustProxy: boolean('TRUST_PROXY', {
    default: false,
    description:
      "`true` behind a proxy (Heroku's router): the client address is the last `X-Forwarded-For` entry and `X-Forwarded-Host`/`-Proto` count for the service's own origin",
  }),
  simCallMs: integer('SIM_CALL_MS', {
    min: 0,
    max: 600_000,
    default: 2000,
    local: { test: '`200`' },
    description: 'how long a simulated call lasts before its webhooks are sent',
  }),
  shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', {
    min: 1000,
    max: 120_000,
    default: 25_000,
    description: 'how long a process may take to stop after SIGTERM',
  }),
  otelExporterOtlpEndpoint: optional(
    url('OTEL_EXPORTER_OTLP_ENDPOINT', {
      protocols: ['http:', 'https:'],
      base: true,
      description:
        'OTLP/HTTP collector; set, the processes send traces to `…/v1/traces` (docs/tracing.md); unset, tracing is not even loaded',
    }),
  ),
  otelServiceName: optional(
    text('OTEL_SERVICE_NAME', {
      pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$',
      patternText: 'a name of 1 to 64 letters, digits, ".", "_" or "-"',
      description:
        "the traces' `service.name`; unset: `intake-web` for the web process, `intake-worker` for workers",
    }),
  ),
  jobLockMs: integer('JOB_LOCK_MS', {
    min: 1000,
    max: 600_000,
    default: 30_000,
    description:
      "BullMQ job lock (and stalled-job check interval): how soon a crashed worker's job is taken over by another",
  }),
  callLockMs: integer('CALL_LOCK_MS', {
    min: 1000,
    max: 600_000,
    default: 30_000,
    description:
      "how long a call record's write lock (the place-call and call-event jobs take turns on a call) lasts unreleased: how soon a crashed worker's lock on a call frees itself; longer than any one write may take",
  }),
  oauthTokenLockMs: integer('OAUTH_TOKEN_LOCK_MS', {
    min: 1000,
    max: 600_000,
    default: 30_000,
    description:
      "a firm's OAuth token lock (Clio, RingCentral: one refresh at a time, as the provider rotates the refresh token), renewed every third of it while a refresh runs: how long it outlives a worker that died holding it",
  }),
  effectLeaseMs: integer('EFFECT_LEASE_MS', {
    min: 3000,
    max: 600_000,
    default: 30_000,
    description:
      "how long an outside effect under way (a dial, a CRM write, a notification) is held `running` without a renewal (renewed every third of it while it and its record's write run): another attempt waits for it rather than repeating it, and one whose holder died is reconciled or repeated this long (plus EFFECT_LEASE_CLOCK_MARGIN_MS) after its last renewal",
  }),
  effectLeaseClockMarginMs: integer('EFFECT_LEASE_CLOCK_MARGIN_MS', {
    min: 0,
    max: 60_000,
    default: 5_000,
    description:
      "how long past its end an effect's lease still counts as live: a lease is written with its holder's clock and judged with another worker's, so this must exceed how far the workers' clocks may differ (NTP keeps them within milliseconds)",
  }),
  effectTimingFile: optional(
    text('EFFECT_TIMING_FILE', {
      description:
        "measurements: each workflow step's effect appends a JSON line (marked, sent, answered, outcome stored, recorded; ms) to this file; unset in production (bench/workflows-exactly-once.ts)",
    }),
  ),
  workerConcurrency: integer('WORKER_CONCURRENCY', {
    min: 1,
    max: 500,
    default: 10,
    description: 'jobs one worker process runs at once per queue (unless a queue sets its own)',
  }),
  queuePrefix: text('QUEUE_PREFIX', {
    default: 'bull',
    description: 'prefix of every BullMQ key, so several deployments can share one Redis',
  }),
  workerQueues: optional(
    list('WORKER_QUEUES', {
      item: '^[a-z][a-z0-9-]{0,62}$',
      itemText: 'queue names (lowercase letters, digits and "-")',
      description:
        'the queues a worker process consumes (`calls`, `call-events`, `call-effects`, `simulator`, `maintenance`, `campaigns`, `bookings`, `contacts`, `webhooks`, `workflows`); unset: every queue',
    }),
  ),
  callEffectRetryMs: integer('CALL_EFFECT_RETRY_MS', {
    min: 100,
    max: 600_000,
    default: 2000,
    description:
      'how long after a failed call_analyzed effect (lead, CRM, email, team chat) its first retry comes, doubled at each of its 11 retries (by default about an hour in all before it is `failed`)',
  }),
  webhookRetrySchedule: text('WEBHOOK_RETRY_SCHEDULE', {
    pattern: '^ *[0-9]{1,7}(ms|s|m|h|d)( *, *[0-9]{1,7}(ms|s|m|h|d)){0,49} *$',
    patternText:
      'a comma-separated list of 1 to 50 durations such as `500ms`, `5s`, `5m`, `2h`, `1d` (repeats count)',
    default: '5s,5m,30m,2h,5h,10h,10h',
    description:
      'the waits before each retry of a failed webhook delivery (each ±20 % jitter; a longer `Retry-After` is honoured); after the last the delivery is given up (docs/events.md#retries)',
  }),
  webhookOrderWaitMs: integer('WEBHOOK_ORDER_WAIT_MS', {
    min: 0,
    max: 7 * 24 * HOUR_MS,
    default: HOUR_MS,
    description:
      'how long a webhook delivery waits behind an earlier one of the same subject to the same endpoint that is still retrying (or an earlier event not yet fanned out) before it goes on, marked out of order; counted from when the earlier one was recorded or became pending, not from when it occurred (docs/events.md#ordering)',
  }),
  webhookDisableAfterMs: integer('WEBHOOK_DISABLE_AFTER_MS', {
    min: 1000,
    max: 365 * 24 * HOUR_MS,
    default: 5 * 24 * HOUR_MS,
    description:
      'a webhook endpoint whose every attempt has failed for this long is disabled and the firm mailed',
  }),
  slackTimeoutMs: integer('SLACK_TIMEOUT_MS', {
    min: 1000,
    max: 120_000,
    default: 15_000,
    description:
      "the longest a workflow's Slack post may take, 429 waits included, before it is abandoned; its effect's lease lasts this much longer than `EFFECT_LEASE_MS`, as `SMTP_SEND_TIMEOUT_MS` for mail",
  }),
  webhookTimeoutMs: integer('WEBHOOK_TIMEOUT_MS', {
    min: 100,
    max: 60_000,
    default: 15_000,
    description: 'how long a webhook delivery may take, connection to last byte, before it counts as failed',
  }),
  campaignRetryDelayMs: integer('CAMPAIGN_RETRY_DELAY_MS', {
    min: 0,
    max: 7 * 24 * HOUR_MS,
    default: HOUR_MS,
    description:
      'how long after a not_connected campaign call its lead is called again (at least); 2 retries at most',
  }),
  workflowTimeScale: integer('WORKFLOW_TIME_SCALE', {
    min: 1,
    max: 86_400_000,
    default: 1,
    description:
      'how many times faster than real time workflow `wait` and `wait_for` delays run: a wait of a day is a delayed job of a day divided by this. 1 in production; tests set it so a day passes in milliseconds (docs/workflows.md#time)',
  }),
  workflowLeadWaitMs: integer('WORKFLOW_LEAD_WAIT_MS', {
    min: 0,
    max: 24 * HOUR_MS,
    default: HOUR_MS,
    description:
      "how long a run's steps wait for the lead their event names while it is not stored yet (a call's lead is made by its lead effect, after call.analyzed is recorded); past it a step goes on without the lead (docs/workflows.md#runs)",
  }),
  workflowMaxConcurrentRuns: integer('WORKFLOW_MAX_CONCURRENT_RUNS', {
    min: 1,
    max: 1_000_000,
    default: 1000,
    description:
      'workflow runs one firm may have under way at once (waiting runs count); a run started past it ends at once with status `limited` (docs/workflows.md#bounds)',
  }),
  workflowMaxStepsPerDay: integer('WORKFLOW_MAX_STEPS_PER_DAY', {
    min: 1,
    max: 10_000_000,
    default: 50_000,
    description:
      "workflow steps one firm's runs may take per UTC day; a run whose next step passes it ends with status `limited` (docs/workflows.md#bounds)",
  }),
  workflowMaxLoopIterations: integer('WORKFLOW_MAX_LOOP_ITERATIONS', {
    min: 1,
    max: 1000,
    default: 10,
    description:
      'how many times one run may enter the same node (a cycle through a `wait`); the visit past it ends the run with status `limited` (docs/workflows.md#bounds)',
  }),
  campaignFanoutChunk: integer('CAMPAIGN_FANOUT_CHUNK', {
    min: 1,
    max: 5000,
    default: 500,
    description: 'lead entries a campaign fan-out reads and adds per `addBulk` (and per checkpoint)',
  }),
  dialSlotLeaseMs: integer('DIAL_SLOT_LEASE_MS', {
    min: 1000,
    max: 24 * HOUR_MS,
    default: 3_900_000,
    description:
      "how long a dial slot (pacing) stays taken without its call's end event before it frees itself (Retell's default longest call, 1 h, plus ringing)",
  }),
  callingHours: hoursRange('CALLING_HOURS', {
    default: { start: '08:00', end: '21:00' },
    local: { start: '`00:00-24:00` with the simulator', test: '`00:00-24:00`' },
    description:
      "the hours a call may be dialled in the callee's local time, in every time zone the number may be in (docs/compliance.md#the-dial-gate); a firm's `calling_window` and state rules only narrow it; wider than the default: a `warn` line at start",
  }),
  dialAttemptsPerDay: integer('DIAL_ATTEMPTS_PER_DAY', {
    min: 1,
    max: 1_000_000,
    default: 3,
    local: { start: '`1000` with the simulator', test: '`1000`' },
    description:
      "dial attempts one firm may make to one number per rolling 24 h, over campaigns, retries and direct calls (docs/compliance.md#frequency-caps); a state's lower figure wins; above the default: a `warn` line at start",
  }),
  complianceStateRules: boolean('COMPLIANCE_STATE_RULES', {
    default: true,
    local: { start: '`false` with the simulator', test: '`false`' },
    description:
      "apply the states' stricter calling hours and caps by the number's region (docs/compliance.md#the-dial-gate); `false`: a `warn` line at start",
  }),
  campaignDefaultPurpose: oneOf('CAMPAIGN_DEFAULT_PURPOSE', ['marketing', 'informational'], {
    default: 'marketing',
    local: { start: '`informational` with the simulator', test: '`informational`' },
    description:
      'the `purpose` of a campaign created without one (an explicit `purpose` always wins): a marketing campaign calls only leads with written consent (docs/compliance.md#consent); `informational`: a `warn` line at start',
  }),
  informationalConsent: boolean('INFORMATIONAL_CONSENT', {
    default: true,
    local: { start: '`false` with the simulator', test: '`false`' },
    description:
      "an informational campaign calls only leads with consent of some kind (written, an inquiry, an existing client): an AI voice's call to a number that may be a mobile one needs the person's prior express consent (docs/compliance.md#consent); `false`: a `warn` line at start",
  }),
  dialSlotReapMs: integer('DIAL_SLOT_REAP_MS', {
    min: 1000,
    max: HOUR_MS,
    default: 30_000,
    description:
      'how often the maintenance reaper frees dial slots whose lease (`DIAL_SLOT_LEASE_MS`) ran out and wakes the calls waiting for them',
  }),
  jobSchedulesCheckMs: integer('JOB_SCHEDULES_CHECK_MS', {
    min: 1000,
    max: HOUR_MS,
    default: 60_000,
    description:
      "how often each worker process looks at its queues' job schedulers (the maintenance sweeps) and adds again a scheduler's next run when none is pending: a Redis failover can lose it, and the sweep would never run again (docs/redis.md#what-a-failover-can-lose)",
  }),
  lostCallSweepMs: integer('LOST_CALL_SWEEP_MS', {
    min: 1000,
    max: 24 * HOUR_MS,
    default: 300_000,
    description:
      "how often the maintenance sweep looks for lost calls (docs/calls.md#lost-calls): calls never dialled whose `place-call` job is gone (a Redis failover's lost writes, a crash between the call's record and its job) or failed for good without ending them, dialled calls whose events stopped, which it asks the voice provider about, and ended calls whose analysis stopped",
  }),
  lostDialAfterMs: integer('LOST_DIAL_AFTER_MS', {
    min: 1000,
    max: 7 * 24 * HOUR_MS,
    default: 600_000,
    description:
      'how old an undialled call without a `place-call` job (or with one that failed for good) must be before the sweep (`LOST_CALL_SWEEP_MS`) takes it for lost: longer than any request that creates a call takes',
  }),
  lostEndAfterMs: integer('LOST_END_AFTER_MS', {
    min: 1000,
    max: 7 * 24 * HOUR_MS,
    default: 600_000,
    description:
      'how long a dialled call may stay unfinished with its record unchanged before the sweep (`LOST_CALL_SWEEP_MS`) asks the voice provider how it stands, and applies the end the provider reports when its event never came',
  }),
  contactsImportWaitMs: integer('CONTACTS_IMPORT_WAIT_MS', {
    min: 0,
    max: 60_000,
    default: 25_000,
    description:
      'how long `POST /api/contacts/import` waits for its job before answering `202` with the `job_id`',
  }),
  contactsImportLockMs: integer('CONTACTS_IMPORT_LOCK_MS', {
    min: 1000,
    max: 600_000,
    default: 30_000,
    description:
      "a firm's turn to import contacts (a Redis lock, renewed every third of it while held): how long it outlives a worker that died holding it, so how soon that import's retry may run",
  }),
  bookingRemindersPerFirm: integer('BOOKING_REMINDERS_PER_FIRM', {
    min: 1,
    max: 1_000_000,
    default: 10_000,
    description:
      "booking reminders a firm may have scheduled ahead at once; a booking's reminders past it are not scheduled (logged)",
  }),
  reminderLeaseMs: integer('REMINDER_LEASE_MS', {
    min: 3000,
    max: 600_000,
    default: 30_000,
    description:
      'how long a booking reminder being sent is held (`sending`) without a renewal (renewed every third of it while the send runs): how soon a reminder whose sender died is sent by another attempt',
  }),
  bookingMailsPerFirmPerDay: integer('BOOKING_MAILS_PER_FIRM_PER_DAY', {
    min: 1,
    max: 1_000_000,
    default: 1_000,
    description:
      'booking reminder mails a firm may send per UTC day; a reminder past it is recorded `failed` with the reason',
  }),
  contactsImportMaxPendingBytes: integer('CONTACTS_IMPORT_MAX_PENDING_BYTES', {
    min: 1024,
    max: 2 ** 40,
    default: 64 * 1024 * 1024,
    description:
      "bytes of staged rows (their JSON text) one firm's contacts imports accepted and not yet finished may hold; an import that would pass it is `429` with `Retry-After` (one larger than it alone is let in when the firm has none pending)",
  }),
  contactsImportMaxPending: integer('CONTACTS_IMPORT_MAX_PENDING', {
    min: 1,
    max: 1000,
    default: 64,
    description:
      'contacts imports one firm may have accepted and not yet finished, however small (a guard on the work of counting them; `CONTACTS_IMPORT_MAX_PENDING_BYTES` bounds what they hold); one more is `429` with `Retry-After`',
  }),
  contactsSyncMaxRows: integer('CONTACTS_SYNC_MAX_ROWS', {
    min: 100,
    max: 10_000_000,
    default: 50_000,
    description:
      "contacts one Clio sync reads at most (as an import's 5,000 rows); the sync then stops `failed`, what it stored kept",
  }),
  contactsSyncMaxPages: integer('CONTACTS_SYNC_MAX_PAGES', {
    min: 1,
    max: 1_000_000,
    default: 1_000,
    description:
      'listing pages one Clio sync reads at most (empty pages included); the sync then stops `failed`, what it stored kept',
  }),
  contactsSyncMaxMs: integer('CONTACTS_SYNC_MAX_MS', {
    min: 1000,
    max: 24 * HOUR_MS,
    default: HOUR_MS,
    description:
      'how long one Clio sync may run from its start (waits included); past it the sync stops `failed`, what it stored kept',
  }),
  contactsSyncSlicePages: integer('CONTACTS_SYNC_SLICE_PAGES', {
    min: 1,
    max: 10_000,
    default: 10,
    description:
      "pages a sync reads in one turn of a worker's contacts slot before it goes to the back of the queue, so other firms' imports and syncs get their turn",
  }),
});

export type Config = Static<typeof CONFIG_SCHEMA>;
