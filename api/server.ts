// The Procfile's web process: HTTP on PORT, graceful drain on SIGTERM. Tracing, when configured,
// must be running before http, Koa, MongoDB and ioredis are first imported: this entry imports
// only the configuration and the switch, then the process itself (./web-process.ts).
import { loadConfigOrExit } from '../core/platform/config.js';
import { startTracing } from '../core/platform/telemetry/start.js';

const config = loadConfigOrExit();
await startTracing(config, 'intake-web');
const { runWeb } = await import('./web-process.js');
await runWeb(config);
