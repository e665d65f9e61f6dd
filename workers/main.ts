// The Procfile's worker process: one BullMQ Worker per queue it consumes (WORKER_QUEUES,
// default all), graceful stop on SIGTERM. Tracing, when configured, must be running before
// ioredis, MongoDB and http are first imported: this entry imports only the signal holding, the
// configuration and the switch, then the process itself (./worker-process.ts). A SIGTERM while
// it loads ends it with exit 0 (core/platform/held-signals.ts).
import { holdSignalsWhileLoading } from '../core/platform/held-signals.js';

holdSignalsWhileLoading();
const { loadConfigOrExit } = await import('../core/platform/config.js');
const { startTracing } = await import('../core/platform/telemetry/start.js');
const config = loadConfigOrExit();
await startTracing(config, 'intake-worker');
const { runWorkers } = await import('./worker-process.js');
runWorkers(config);
