// The simulator's requests to the service's own call webhook and tools go through the bounded
// exchange every outgoing request uses (core/integrations/http/bounded-http.ts): signed as
// Retell signs, the answer read only up to its limit, a failure that says whether anything was
// sent. Its target is the operator's PUBLIC_BASE_URL (loopback here), which no URL policy judges.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { HttpRequestError } from '../../core/integrations/http/bounded-http.js';
import { simulatorPost } from '../../core/integrations/voice/simulator-http.js';
import { verifyRetellSignature } from '../../core/integrations/voice/webhook-signature.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function listen(
  handler: (req: IncomingMessage, body: string, res: import('node:http').ServerResponse) => void,
) {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handler(req, Buffer.concat(chunks).toString('utf8'), res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

it("posts JSON to a loopback http:// URL, signed with the call's key, and reads the answer", async () => {
  const seen: { type?: string; signature?: string; body?: string } = {};
  const base = await listen((req, body, res) => {
    seen.type = req.headers['content-type'];
    seen.signature = req.headers['x-retell-signature'] as string;
    seen.body = body;
    res.writeHead(202, { 'content-type': 'application/json' }).end('{"received":true}');
  });
  const body = JSON.stringify({ event: 'call_started', call: { call_id: 'sim_1' } });
  const answer = await simulatorPost(`${base}/api/v2/firm-a/webhook`, body, 'key-of-the-call', 5_000);
  expect(answer.status).toBe(202);
  expect(JSON.parse(answer.body)).toEqual({ received: true });
  expect(seen.type).toBe('application/json');
  expect(seen.body).toBe(body);
  expect(verifyRetellSignature(body, 'key-of-the-call', seen.signature!)).toBe(true);
  expect(verifyRetellSignature(body, 'another-key', seen.signature!)).toBe(false);
});

it('a 2xx whose body never ends is an answer once its first MiB is read, not a timeout', async () => {
  const base = await listen((_req, _body, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const timer = setInterval(() => res.write(chunk), 5);
    res.on('close', () => clearInterval(timer));
  });
  // Waiting for the body's end would run into the exchange's limit and reject.
  const answer = await simulatorPost(`${base}/tools/check_availability`, '{}', 'k', 20_000);
  expect(answer.status).toBe(200);
  expect(answer.body.length).toBe(1024 * 1024);
});

it('a refused connection is an HttpRequestError that says nothing was sent', async () => {
  const base = await listen(() => {});
  const port = new URL(base).port;
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  const err = await simulatorPost(`http://127.0.0.1:${port}/webhook`, '{}', 'k', 5_000).catch(
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HttpRequestError);
  expect((err as HttpRequestError).sent).toBe(false);
});
