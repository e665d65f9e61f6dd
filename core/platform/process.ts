import { takeHeldSignal } from './held-signals.js';
import type { Logger } from './logger.js';
import { stopTracing } from './telemetry/start.js';

/**
 * Runs `stop` once on SIGTERM or SIGINT, then sends the spans still buffered, and exits 0 when
 * it finishes, or 1 when it fails or outlasts the deadline (Heroku sends SIGKILL 30 s after
 * SIGTERM; we aim to be gone in 25 s). `stop` is told the deadline (ms since epoch, counted from
 * the signal) so that it can fit every step of its own into it.
 */
export function stopOnSignals(
  log: Logger,
  deadlineMs: number,
  stop: (deadline: number) => Promise<void>,
): void {
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals, at = Date.now()): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    const deadline = at + deadlineMs;
    const force = setTimeout(
      () => {
        log.error('shutdown deadline passed; exiting');
        process.exit(1);
      },
      Math.max(0, deadline - Date.now()),
    );
    force.unref();
    // The spans of the stop itself are sent last, in the time left; losing them never fails the stop.
    const stopAll = () =>
      stop(deadline).then(() => {
        let timer: NodeJS.Timeout | undefined;
        const outOfTime = new Promise<void>(
          (r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now() - 100))),
        );
        return Promise.race([stopTracing().catch(() => {}), outOfTime]).finally(() => clearTimeout(timer));
      });
    stopAll().then(
      () => {
        clearTimeout(force);
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', (signal) => shutdown(signal));
  process.on('SIGINT', (signal) => shutdown(signal));
  // A signal that came while the process was starting (held-signals.ts): the stop begins now,
  // its deadline counted from the signal.
  const held = takeHeldSignal();
  if (held !== undefined) shutdown(held.signal, held.at);
}
