import { warnIfComplianceWidened } from '../core/domain/compliance/compliance-defaults.js';
import { exitOnConfigError, type Config } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { startingWork } from '../core/platform/held-signals.js';
import { stopOnSignals } from '../core/platform/process.js';
import { createServices } from '../core/wiring/services.js';
import { warnUnlessNoEviction } from '../core/platform/redis.js';
import { exitWith, guardRedisTls } from '../core/platform/redis-tls.js';
import { processors } from './processors/index.js';
import { selectQueues, startWorkers } from './runner.js';

/** The worker process once configuration (and tracing) are in place: see workers/main.ts. */
export function runWorkers(config: Config): void {
  const queues = exitOnConfigError(() => selectQueues(config.workerQueues));
  const log = createLogger(config.logLevel, 'worker');
  const services = exitOnConfigError(() => createServices(config, log, 'worker'));
  guardRedisTls(services.redis, config, log, exitWith);
  warnIfComplianceWidened(config, log);
  void warnUnlessNoEviction(services.redis, log);
  startingWork();
  const running = startWorkers(services, processors, queues);
  log.info({ queues }, 'workers started');
  stopOnSignals(log, config.shutdownTimeoutMs, () => running.stop());
}
