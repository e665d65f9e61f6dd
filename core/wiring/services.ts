import type { Config } from '../platform/config.js';
import type { Logger } from '../platform/logger.js';
import { createMongo, type Mongo } from '../platform/db/mongo.js';
import { readCacheOf, registerChangeEpoch } from '../platform/db/read-cache.js';
import { registerKeyring } from '../platform/secrets/data-keys.js';
import { createKeyring } from '../platform/secrets/envelope.js';
import { redisKeys } from '../platform/redis-keys.js';
import { UnavailableError } from '../platform/errors.js';
import { createRedis, redisSettings, type RedisClient, type RedisRole } from '../platform/redis.js';
import { createQueues, closeQueues, type Queues } from '../../jobs/queues.js';
import { enqueue } from '../../jobs/define.js';
import { JOBS } from '../../jobs/table.js';
import type { VoiceProvider } from '../integrations/voice/provider.js';
import { RetellProvider } from '../integrations/voice/retell.js';
import { SimulatorProvider } from '../integrations/voice/simulator.js';
import type { ChatEngine } from '../integrations/chat/engine.js';
import { OpenAiChatEngine } from '../integrations/chat/openai.js';
import { SmtpMailer, type Mailer } from '../integrations/mail/mailer.js';
import { OpenAiCallerExtractor, type CallerDataExtractor } from '../integrations/chat/openai-extractor.js';

// The one place that wires a process: configuration, log, data stores, queues and the outside
// systems chosen by configuration. Domain code receives this and never builds clients itself.

/** What both the web and the worker processes hold. */
export interface Services {
  config: Config;
  log: Logger;
  mongo: Mongo;
  redis: RedisClient;
  queues: Queues;
  /** The configured voice platform (VOICE_PROVIDER: the simulator, or Retell). */
  voice: VoiceProvider;
  /** The LLM chat engine when OPENAI_API_KEY is set; otherwise the built-in intake agent answers. */
  llm: ChatEngine | null;
  /** Outgoing email when SMTP_URL is set; without it email effects are recorded as skipped. */
  mailer: Mailer | null;
  /** OpenAI structured output for call_analyzed extraction when OPENAI_API_KEY is set; else deterministic. */
  extractor: CallerDataExtractor | null;
  close(): Promise<void>;
}

function createVoiceProvider(config: Config, queues: Queues, mongo: Mongo): VoiceProvider {
  switch (config.voiceProvider) {
    case 'simulator':
      return new SimulatorProvider({
        db: mongo.db,
        simCallMs: config.simCallMs,
        schedule: (step, delay) => enqueue(queues, JOBS.simulatorStep, step, { delay }),
      });
    case 'retell':
      // loadConfig refuses VOICE_PROVIDER=retell without RETELL_API_KEY.
      return new RetellProvider({ apiKey: config.retellApiKey ?? '', baseUrl: config.retellBaseUrl });
  }
}

export function createServices(config: Config, log: Logger, role: RedisRole): Services {
  const mongo = createMongo(config.mongodbUri, { log });
  const redis = createRedis(redisSettings(config), role);
  const queues = createQueues(redis, redisKeys(config), (err) =>
    log.warn({ err: err.message }, 'queue connection error'),
  );
  // Every process announces its changes to cached collections; the web and the workers cache
  // them, and nothing cached is trusted from the moment this connection is lost until the epoch
  // is read again (core/platform/db/read-cache.ts).
  const epochKey = redisKeys(config).readCacheEpoch();
  registerChangeEpoch(mongo.db, {
    async announce() {
      if (redis.status !== 'ready') throw new UnavailableError('redis');
      await redis.incr(epochKey);
    },
    async read() {
      if (redis.status !== 'ready') return null;
      return (await redis.get(epochKey)) ?? '0';
    },
  });
  redis.on('close', () => readCacheOf(mongo.db)?.observeEpoch(null));
  // The firms' stored secrets are sealed under SECRETS_KEY (docs/operations.md#secrets-at-rest).
  registerKeyring(mongo.db, createKeyring(config.secretsKey, config.secretsKeyPrevious));
  const mailer = config.smtpUrl === undefined ? null : new SmtpMailer(config.smtpUrl, config.mailFrom);
  return {
    config,
    log,
    mongo,
    redis,
    queues,
    voice: createVoiceProvider(config, queues, mongo),
    llm:
      config.openaiApiKey === undefined
        ? null
        : new OpenAiChatEngine({
            apiKey: config.openaiApiKey,
            baseUrl: config.openaiBaseUrl,
            model: config.openaiModel,
          }),
    mailer,
    extractor:
      config.openaiApiKey === undefined
        ? null
        : new OpenAiCallerExtractor({
            apiKey: config.openaiApiKey,
            baseUrl: config.openaiBaseUrl,
            model: config.openaiModel,
          }),
    async close() {
      mailer?.close();
      await closeQueues(queues).catch(() => {});
      redis.disconnect();
      await mongo.close().catch(() => {});
    },
  };
}
