// The Procfile's worker process: one BullMQ Worker per queue, graceful stop on SIGTERM.
import { loadConfigOrExit } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { stopOnSignals } from '../core/platform/process.js';
import { createServices } from '../core/wiring/services.js';
import { warnUnlessNoEviction } from '../core/platform/redis.js';
import { processors } from './processors/index.js';
import { startWorkers } from './runner.js';

const config = loadConfigOrExit();
const log = createLogger(config.logLevel, 'worker');
const services = createServices(config, log, 'worker');
void warnUnlessNoEviction(services.redis, log);
const running = startWorkers(services, processors);
log.info({ queues: processors.map((p) => p.queue) }, 'workers started');
stopOnSignals(log, config.shutdownTimeoutMs, () => running.stop());
