// The Procfile's release process: prepares MongoDB for this version. Safe to run again.
import { exitOnConfigError, loadConfigOrExit } from '../config.js';
import { createLogger } from '../logger.js';
import { registerKeyring } from '../secrets/data-keys.js';
import { createKeyring } from '../secrets/envelope.js';
import { releaseSecrets } from '../secrets/sealed-fields.js';
import { createMongo } from './mongo.js';
import { dropRetiredIndexes, ensureIndexes } from './indexes.js';
import { releaseCallEffectRecords } from './migrations/effect-records.js';
import { createRedis, redisSettings } from '../redis.js';

const config = loadConfigOrExit();
const log = createLogger(config.logLevel, 'release');
const mongo = exitOnConfigError(() => createMongo(config.mongodbUri, { log }));
try {
  const indexes = await ensureIndexes(mongo.db);
  log.info({ indexes }, 'indexes ensured');
  const retired = await dropRetiredIndexes(mongo.db);
  log.info({ indexes: retired }, 'retired indexes dropped');
  // Stored secrets: data keys wrapped with SECRETS_KEY, plaintext left by older versions sealed.
  registerKeyring(mongo.db, createKeyring(config.secretsKey, config.secretsKeyPrevious));
  const secrets = await releaseSecrets(mongo.db);
  log.info(secrets, 'stored secrets sealed with SECRETS_KEY');
  // Effect records kept on calls by older versions, moved to the calls' records documents, each
  // call under its lock (the lock the workers take).
  const redis = createRedis(redisSettings(config), 'producer');
  try {
    const moved = await releaseCallEffectRecords(mongo.db, redis, config);
    log.info(moved, 'effect records moved off the call documents');
  } finally {
    redis.disconnect();
  }
} catch (err) {
  log.error({ err }, 'release failed');
  process.exitCode = 1;
} finally {
  await mongo.close();
}
