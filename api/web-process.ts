import type { Config } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { stopOnSignals } from '../core/platform/process.js';
import { createServices } from '../core/wiring/services.js';
import { startWeb } from './web.js';

/** The web process once configuration (and tracing) are in place: see api/server.ts. */
export async function runWeb(config: Config): Promise<void> {
  const log = createLogger(config.logLevel, 'web');
  const web = await startWeb(createServices(config, log, 'producer'));
  log.info({ port: web.port }, 'web listening');
  stopOnSignals(log, config.shutdownTimeoutMs, () => web.stop());
}
