import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, name: string): Logger {
  return pino({
    name,
    level,
    // Secrets never reach the logs, whatever a caller passes.
    redact: {
      paths: ['req.headers.authorization', '*.authorization', '*.key', '*.access_token', '*.secret'],
      censor: '[redacted]',
    },
  });
}
