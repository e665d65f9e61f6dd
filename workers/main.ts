// The Procfile's worker process: one BullMQ Worker per queue, graceful stop on SIGTERM.
import { loadConfigOrExit } from '../core/config.js';
import { createLogger } from '../core/logger.js';
import { stopOnSignals } from '../core/process.js';
import { createServices } from '../core/services.js';
import { warnUnlessNoEviction } from '../core/redis.js';
import { processors } from './processors.js';
import { startWorkers } from './worker.js';

const config = loadConfigOrExit();
const log = createLogger(config.logLevel, 'worker');
const services = createServices(config, log, 'worker');
void warnUnlessNoEviction(services.redis, log);
const running = startWorkers(services, processors);
log.info({ queues: processors.map((p) => p.queue) }, 'workers started');
stopOnSignals(log, config.shutdownTimeoutMs, () => running.stop());
