import type { Server } from 'node:http';
import type { Services } from '../core/wiring/services.js';
import { warnUnlessNoEviction } from '../core/platform/redis.js';
import { createApp, type App } from './app.js';

export interface Web {
  app: App;
  server: Server;
  port: number;
  stop(): Promise<void>;
}

/** Listens on the configured port (0: any free one) and returns how to drain and stop. */
export async function startWeb(services: Services, host = '0.0.0.0'): Promise<Web> {
  const app = createApp(services);
  const server = app.koa.listen(services.config.port, host);
  server.keepAliveTimeout = 65_000; // longer than typical load balancer idle timeouts
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  void warnUnlessNoEviction(services.redis, services.log);
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : services.config.port;
  const stop = async (): Promise<void> => {
    app.lifecycle.shuttingDown = true;
    // Stop accepting, let in-flight requests finish, drop idle keep-alive sockets.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const deadline = setTimeout(
      () => server.closeAllConnections(),
      Math.max(1000, services.config.shutdownTimeoutMs - 5000),
    );
    await closed;
    clearTimeout(deadline);
    await services.close();
  };
  return { app, server, port, stop };
}
