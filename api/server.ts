// The Procfile's web process: HTTP on PORT, graceful drain on SIGTERM.
import { loadConfigOrExit } from '../core/config.js';
import { createLogger } from '../core/logger.js';
import { stopOnSignals } from '../core/process.js';
import { createServices } from '../core/services.js';
import { startWeb } from './web.js';

const config = loadConfigOrExit();
const log = createLogger(config.logLevel, 'web');
const web = await startWeb(createServices(config, log, 'producer'));
log.info({ port: web.port }, 'web listening');
stopOnSignals(log, config.shutdownTimeoutMs, () => web.stop());
