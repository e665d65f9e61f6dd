// The Procfile's web process: HTTP on PORT, graceful drain on SIGTERM. Tracing, when configured,
// must be running before http, Koa, MongoDB and ioredis are first imported: this entry imports
// only the signal holding, the configuration and the switch, then the process itself
// (./web-process.ts). A SIGTERM while it loads ends it with exit 0 (core/platform/held-signals.ts).
import { holdSignalsWhileLoading } from '../core/platform/held-signals.js';

holdSignalsWhileLoading();
const { loadConfigOrExit } = await import('../core/platform/config.js');
const { startTracing } = await import('../core/platform/telemetry/start.js');
const config = loadConfigOrExit();
await startTracing(config, 'intake-web');
const { runWeb } = await import('./web-process.js');
await runWeb(config);
