// The Procfile's worker process: one BullMQ Worker per queue it consumes (WORKER_QUEUES,
// default all), graceful stop on SIGTERM. Tracing, when configured, must be running before
// ioredis, MongoDB and http are first imported: this entry imports only the configuration and
// the switch, then the process itself (./worker-process.ts).
import { loadConfigOrExit } from '../core/platform/config.js';
import { startTracing } from '../core/platform/telemetry/start.js';

const config = loadConfigOrExit();
await startTracing(config, 'intake-worker');
const { runWorkers } = await import('./worker-process.js');
runWorkers(config);
