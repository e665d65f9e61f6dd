import { pino, type Logger } from 'pino';
import { traceFields, tracingActive } from './telemetry/start.js';

export type { Logger };

export function createLogger(level: string, name: string): Logger {
  return pino({
    name,
    level,
    // With tracing on, a line written inside a span names it (trace_id, span_id).
    ...(tracingActive() ? { mixin: traceFields } : {}),
    // Secrets never reach the logs, whatever a caller passes.
    redact: {
      paths: ['req.headers.authorization', '*.authorization', '*.key', '*.access_token', '*.secret'],
      censor: '[redacted]',
    },
  });
}
