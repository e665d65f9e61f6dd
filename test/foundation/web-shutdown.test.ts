// The web process's stop (SIGTERM) takes no more work on a keep-alive socket that was open: a
// request in flight at the stop is answered, and the next request on that socket is either never
// read (the socket closed once idle) or answered with `Connection: close` — never served as
// before, with the socket kept for more until the deadline cuts it mid-answer.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop().catch(() => {});
});

/** Everything the server writes on the socket until it closes it. */
function collect(socket: Socket): { text: () => string; closed: Promise<void> } {
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  const closed = new Promise<void>((resolve) => {
    socket.on('close', () => resolve());
    socket.on('error', () => resolve());
  });
  return { text: () => text, closed };
}

describe('the web process stopping', () => {
  it('answers the request in flight, and serves no further request on its keep-alive socket', async () => {
    const url = new URL(stack.baseUrl);
    const socket = connect(Number(url.port), url.hostname);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const out = collect(socket);
    const auth = `Authorization: Bearer ${stack.config.adminApiKey}\r\n`;
    // In flight: its headers read (the request begun), its body not yet sent.
    const begun = new Promise<void>((resolve) => stack.web.server.once('request', () => resolve()));
    socket.write(
      `POST /api/v2/list-calls HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n`,
    );
    await begun;
    const stopped = stack.web.stop();
    socket.write('{}');
    // The answer to the request in flight (a 400: list-calls needs firmSlug) comes whole.
    await eventually(async () => expect(out.text()).toMatch(/^HTTP\/1\.1 400 [^]*\r\n\r\n\{/));
    // One more request on the same socket, after the stop began.
    if (!socket.destroyed) socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`);
    await out.closed;
    await stopped;
    const answers = out.text().split(/(?=HTTP\/1\.1 \d{3} )/);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 400 /);
    // Either never read, or answered with Connection: close: no second keep-alive answer.
    for (const later of answers.slice(1)) expect(later).toMatch(/\r\nconnection: close\r\n/i);
  });
});
