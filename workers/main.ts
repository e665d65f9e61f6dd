// The Procfile's worker process: one BullMQ Worker per queue it consumes (WORKER_QUEUES,
// default all), graceful stop on SIGTERM.
import { exitOnConfigError, loadConfigOrExit } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { stopOnSignals } from '../core/platform/process.js';
import { createServices } from '../core/wiring/services.js';
import { warnUnlessNoEviction } from '../core/platform/redis.js';
import { exitWith, guardRedisTls } from '../core/platform/redis-tls.js';
import { processors } from './processors/index.js';
import { selectQueues, startWorkers } from './runner.js';

const config = loadConfigOrExit();
const queues = exitOnConfigError(() => selectQueues(config.workerQueues));
const log = createLogger(config.logLevel, 'worker');
const services = exitOnConfigError(() => createServices(config, log, 'worker'));
guardRedisTls(services.redis, config, log, exitWith);
void warnUnlessNoEviction(services.redis, log);
const running = startWorkers(services, processors, queues);
log.info({ queues }, 'workers started');
stopOnSignals(log, config.shutdownTimeoutMs, () => running.stop());
