import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Services } from '../core/wiring/services.js';
import { warnUnlessNoEviction } from '../core/platform/redis.js';
import { watchOutboxGate } from '../core/domain/deliveries/delivery-outbox.js';
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
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  void warnUnlessNoEviction(services.redis, services.log);
  watchOutboxGate(services);
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : services.config.port;
  const stop = async (): Promise<void> => {
    app.lifecycle.shuttingDown = true;
    // Stop accepting, let in-flight requests finish, drop idle keep-alive sockets. A request that
    // still comes on an open keep-alive socket is answered with `Connection: close` (Node then
    // closes the socket after it), and sockets whose request was in flight are dropped once idle:
    // server.close() closes only the ones idle at its call, and the others took more requests
    // until the deadline cut them mid-answer.
    server.prependListener('request', (_req, res) => res.setHeader('Connection', 'close'));
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    const deadline = setTimeout(
      () => server.closeAllConnections(),
      Math.max(1000, services.config.shutdownTimeoutMs - 5000),
    );
    await closed;
    clearInterval(idle);
    clearTimeout(deadline);
    await services.close();
  };
  return { app, server, port, stop };
}

interface ClientErrorAnswer {
  status: number;
  reason: string;
  code: string;
  message: string;
}

const BAD_REQUEST: ClientErrorAnswer = {
  status: 400,
  reason: 'Bad Request',
  code: 'invalid_request',
  message: 'The request is not valid HTTP.',
};
const CLIENT_ERRORS = new Map<string, ClientErrorAnswer>([
  [
    'HPE_INVALID_METHOD',
    {
      status: 501,
      reason: 'Not Implemented',
      code: 'not_implemented',
      message: 'This service does not implement that method.',
    },
  ],
  [
    'HPE_HEADER_OVERFLOW',
    {
      status: 431,
      reason: 'Request Header Fields Too Large',
      code: 'headers_too_large',
      message: 'The request headers are too large.',
    },
  ],
  [
    'ERR_HTTP_REQUEST_TIMEOUT',
    {
      status: 408,
      reason: 'Request Timeout',
      code: 'request_timeout',
      message: 'The request did not arrive in time.',
    },
  ],
]);

/**
 * What Node's HTTP parser refuses before Koa sees it (a method that is not HTTP, oversized
 * headers, garbage) is answered in the error shape too; Node alone would answer it bare.
 * The answer is written unless a response on the socket is being written (Node's own rule): on a
 * keep-alive connection the earlier answers were written whole, so bytes already written say
 * nothing (fetch and browsers reuse connections, and got a reset instead of the 501).
 */
function answerClientError(err: Error & { code?: string }, socket: Socket): void {
  // The response Node is writing on this socket (null once finished), what Node's default reads:
  // one begun and not yet ended would have this answer cut into it.
  const inFlight = (
    socket as Socket & { _httpMessage?: { headersSent: boolean; writableEnded: boolean } | null }
  )._httpMessage;
  const midAnswer = inFlight?.headersSent === true && !inFlight.writableEnded;
  if (!socket.writable || midAnswer || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  const { status, reason, code, message } = CLIENT_ERRORS.get(err.code ?? '') ?? BAD_REQUEST;
  const body = JSON.stringify({ error: { code, message } });
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    () => socket.destroy(),
  );
}
