import type { Redis } from 'ioredis';
import type { Config } from '../platform/config.js';
import type { Logger } from '../platform/logger.js';
import { createMongo, type Mongo } from '../platform/db/mongo.js';
import { createRedis, type RedisRole } from '../platform/redis.js';
import { createQueues, closeQueues, type Queues } from '../../jobs/queues.js';
import { createVoiceProvider } from '../integrations/voice/index.js';
import type { VoiceProvider } from '../integrations/voice/provider.js';
import { createChatEngine } from '../integrations/chat/index.js';
import type { ChatEngine } from '../integrations/chat/engine.js';

/** What both the web and the worker processes hold: configuration, log, data stores and queues. */
export interface Services {
  config: Config;
  log: Logger;
  mongo: Mongo;
  redis: Redis;
  queues: Queues;
  /** The configured voice platform (simulator or Retell). */
  voice: VoiceProvider;
  /** The configured chat engine (the built-in intake agent, or OpenAI). */
  chat: ChatEngine;
  close(): Promise<void>;
}

export function createServices(config: Config, log: Logger, role: RedisRole): Services {
  const mongo = createMongo(config.mongodbUri);
  const redis = createRedis(config.redisUrl, role);
  const queues = createQueues(redis, config.queuePrefix, (err) =>
    log.warn({ err: err.message }, 'queue connection error'),
  );
  return {
    config,
    log,
    mongo,
    redis,
    queues,
    voice: createVoiceProvider(config, queues, mongo.db),
    chat: createChatEngine(config),
    async close() {
      await closeQueues(queues).catch(() => {});
      redis.disconnect();
      await mongo.client.close().catch(() => {});
    },
  };
}
