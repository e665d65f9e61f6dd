// The Procfile's release process: prepares MongoDB for this version. Safe to run again.
import { loadConfigOrExit } from '../config.js';
import { createLogger } from '../logger.js';
import { createMongo } from './mongo.js';
import { ensureIndexes } from './indexes.js';

const config = loadConfigOrExit();
const log = createLogger(config.logLevel, 'release');
const mongo = createMongo(config.mongodbUri, { log });
try {
  const indexes = await ensureIndexes(mongo.db);
  log.info({ indexes }, 'indexes ensured');
} catch (err) {
  log.error({ err }, 'release failed');
  process.exitCode = 1;
} finally {
  await mongo.close();
}
