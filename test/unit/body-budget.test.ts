// The byte budget of large webhook bodies (api/middleware/body-budget.ts): deliveries that fit
// are admitted at once, the others wait unread in order and are admitted as room frees, and one
// that waits too long is a 503 with Retry-After; a client that goes away leaves the queue. And
// the reader: one buffer, the declared length held to, a trickling body cut off in time.
import { describe, expect, it } from 'vitest';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { ByteBudget, FirmByteBudgets, readBody } from '../../api/middleware/body-budget.js';
import { AppError } from '../../core/platform/errors.js';

describe('ByteBudget', () => {
  it('admits what fits, queues the rest in order, and admits them as room frees', async () => {
    const budget = new ByteBudget(100, 5_000);
    const first = await budget.reserve(60);
    expect(budget.reserved).toBe(60);
    const order: string[] = [];
    const big = budget.reserve(70).then((release) => (order.push('big'), release));
    // A small one behind a waiting big one waits too: first come, first served.
    const small = budget.reserve(10).then((release) => (order.push('small'), release));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(order).toEqual([]);
    first();
    first(); // releasing twice gives back once
    const [releaseBig, releaseSmall] = await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
    expect(budget.reserved).toBe(80);
    releaseBig();
    releaseSmall();
    expect(budget.reserved).toBe(0);
  });

  it('a request larger than the whole budget waits for all of it, never forever', async () => {
    const budget = new ByteBudget(100, 5_000);
    const release = await budget.reserve(500);
    expect(budget.reserved).toBe(100);
    release();
  });

  it('one that waits past the limit is a 503 unavailable with Retry-After, and leaves room for the next', async () => {
    const budget = new ByteBudget(100, 50);
    const held = await budget.reserve(100);
    const refused = await budget.reserve(10).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).status).toBe(503);
    expect((refused as AppError).code).toBe('unavailable');
    expect((refused as AppError).headers).toMatchObject({ 'Retry-After': expect.any(String) });
    held();
    expect(budget.reserved).toBe(0);
  });

  it('a client that goes away while waiting leaves the queue', async () => {
    const budget = new ByteBudget(100, 5_000);
    const held = await budget.reserve(100);
    const gone = new AbortController();
    const waiting = budget.reserve(50, gone.signal).catch((error: unknown) => error);
    gone.abort();
    expect(await waiting).toBeInstanceOf(Error);
    held();
    expect(budget.reserved).toBe(0);
    (await budget.reserve(100))();
  });
});

describe('FirmByteBudgets', () => {
  it("one firm holds at most its share: another firm's delivery finds room while the first firm's next waits", async () => {
    const budgets = new FirmByteBudgets(150, 100, 50, 5_000);
    const a1 = await budgets.reserve('a', 100);
    expect(budgets.process.reserved).toBe(100);
    const order: string[] = [];
    const a2 = budgets.reserve('a', 10).then((release) => (order.push('a2'), release));
    const b1 = await budgets.reserve('b', 40);
    expect(order).toEqual([]);
    expect(budgets.process.reserved).toBe(140);
    a1();
    const releaseA2 = await a2;
    expect(order).toEqual(['a2']);
    releaseA2();
    b1();
    expect(budgets.process.reserved).toBe(0);
    // A body larger than a share takes all of it, and its own size (at most all) of the process's.
    const whole = await budgets.reserve('c', 500);
    expect(budgets.process.reserved).toBe(150);
    whole();
  });

  it("a firm's waiting delivery is a 503 after the wait, and gives its share back", async () => {
    const budgets = new FirmByteBudgets(100, 100, 50, 50);
    const held = await budgets.reserve('a', 100);
    await expect(budgets.reserve('b', 10)).rejects.toMatchObject({ status: 503 });
    held();
    (await budgets.reserve('b', 100))();
    expect(budgets.process.reserved).toBe(0);
  });

  it("unproven signed deliveries, in any firm's name, share one pool: a sender proven to its firm still finds that firm's share", async () => {
    const budgets = new FirmByteBudgets(150, 100, 50, 50);
    // Forgeries in firm a's name from two addresses: the first takes the pool, the second waits
    // and is a 503.
    const forged = await budgets.reserve('a', 100, undefined, '203.0.113.7');
    expect(budgets.unprovenPool.reserved).toBe(50);
    expect(budgets.process.reserved).toBe(50);
    await expect(budgets.reserve('b', 10, undefined, '203.0.113.8')).rejects.toMatchObject({ status: 503 });
    // Retell's address proved itself to firm a (a small signed event): its large body reads in
    // a's share, beside the forgery.
    budgets.prove('a', '198.51.100.9');
    const real = await budgets.reserve('a', 100, undefined, '198.51.100.9');
    expect(budgets.process.reserved).toBe(150);
    real();
    // Proven to a, not to b: a delivery to b from the same address is unproven.
    await expect(budgets.reserve('b', 10, undefined, '198.51.100.9')).rejects.toMatchObject({ status: 503 });
    forged();
    expect(budgets.unprovenPool.reserved).toBe(0);
    // A delivery its headers proved (a bearer token: no sender) takes no room of the pool.
    (await budgets.reserve('b', 100))();
    expect(budgets.unprovenPool.reserved).toBe(0);
    expect(budgets.process.reserved).toBe(0);
  });
});

/** A request body stream with the headers readBody looks at. */
function request(headers: Record<string, string>): PassThrough & IncomingMessage {
  return Object.assign(new PassThrough(), { headers }) as unknown as PassThrough & IncomingMessage;
}

describe('readBody', () => {
  it('reads the declared length into one buffer, multi-byte characters split across chunks', async () => {
    const text = `{"transcript":"${'Agent: Grüß Gott — ¿cómo está? '.repeat(1000)}"}`;
    const bytes = Buffer.from(text);
    const req = request({ 'content-length': String(bytes.length) });
    const read = readBody(req, 1 << 20);
    for (let at = 0; at < bytes.length; at += 777) req.write(bytes.subarray(at, at + 777));
    req.end();
    expect((await read).toString('utf8')).toBe(text);
  });

  it('refuses a declared length over the limit unread (413), and a body longer than it declared (400)', async () => {
    const tooBig = readBody(request({ 'content-length': String(2 << 20) }), 1 << 20);
    await expect(tooBig).rejects.toMatchObject({ status: 413, code: 'payload_too_large' });
    const liar = request({ 'content-length': '4' });
    const read = readBody(liar, 1 << 20);
    liar.end('{"a":1}');
    await expect(read).rejects.toMatchObject({ status: 400 });
  });

  it('without a length: chunks up to the limit, 413 past it', async () => {
    const req = request({ 'transfer-encoding': 'chunked' });
    const read = readBody(req, 10);
    req.write('{"a":');
    req.end('"0123456789"}');
    await expect(read).rejects.toMatchObject({ status: 413 });
  });

  it('a body that does not arrive in time is a 408', async () => {
    const req = request({ 'content-length': '100' });
    const read = readBody(req, 1 << 20, 50);
    req.write('{"trickle":');
    await expect(read).rejects.toMatchObject({ status: 408, code: 'request_timeout' });
  });

  it('a body arriving slower than the minimum rate is a 408 saying so', async () => {
    const req = request({ 'transfer-encoding': 'chunked' });
    const read = readBody(req, 1 << 20, { minBytesPerSecond: 1000, graceMs: 0, withinMs: 60_000 });
    req.write('{"trickle":');
    await expect(read).rejects.toMatchObject({ status: 408, message: expect.stringContaining('too slowly') });
  });

  it('discard: counts and limits the body but keeps none of it', async () => {
    const req = request({ 'content-length': '11' });
    const read = readBody(req, 1 << 20, { discard: true });
    req.end('{"a":"bcd"}');
    expect((await read).length).toBe(0);
    const big = request({ 'transfer-encoding': 'chunked' });
    const refused = readBody(big, 10, { discard: true });
    big.end('{"a":"0123456789"}');
    await expect(refused).rejects.toMatchObject({ status: 413 });
  });
});
