import type { IncomingMessage } from 'node:http';
import { AppError, invalidRequest, payloadTooLarge, serviceUnavailable } from '../../core/platform/errors.js';

/**
 * Bytes of large request bodies one web process holds at once (the call webhook's, up to 32 MiB
 * each). A delivery reserves its Content-Length (the route's whole limit when it sends none)
 * before its body is read and gives it back when its request ends; one that cannot be admitted
 * waits, unread (TCP holds the sender back), first come first served, and after `waitMs` is
 * answered 503 with Retry-After. Without it, 20 deliveries of 32 MiB would ask for some 2 GB of
 * heap at once; with it, memory for bodies stays near a few times `capacity`.
 */
export class ByteBudget {
  private inUse = 0;
  private readonly waiting: Array<{ bytes: number; admit: () => void }> = [];

  constructor(
    readonly capacity: number,
    private readonly waitMs: number,
  ) {}

  /** Bytes reserved now (for tests and metrics). */
  get reserved(): number {
    return this.inUse;
  }

  /** Reserves `bytes` (at most `capacity`); resolves to the release function. */
  async reserve(bytes: number, abandoned?: AbortSignal): Promise<() => void> {
    const amount = Math.min(Math.max(bytes, 0), this.capacity);
    if (this.waiting.length === 0 && this.inUse + amount <= this.capacity) return this.take(amount);
    await new Promise<void>((resolve, reject) => {
      const entry = { bytes: amount, admit: () => resolve() };
      const leave = (error: Error): void => {
        clearTimeout(timer);
        const at = this.waiting.indexOf(entry);
        if (at >= 0) this.waiting.splice(at, 1);
        this.admitWaiting();
        reject(error);
      };
      const timer = setTimeout(
        () =>
          leave(
            serviceUnavailable(
              'The service is receiving too many large request bodies at once; send it again shortly.',
              2,
            ),
          ),
        this.waitMs,
      );
      entry.admit = () => {
        clearTimeout(timer);
        abandoned?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => leave(invalidRequest('The client went away while waiting.'));
      abandoned?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
    return this.take(amount, false);
  }

  private take(amount: number, count = true): () => void {
    if (count) this.inUse += amount;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inUse -= amount;
      this.admitWaiting();
    };
  }

  /** Admits waiting deliveries in order while the first of them fits. */
  private admitWaiting(): void {
    for (let next = this.waiting[0]; next !== undefined; next = this.waiting[0]) {
      if (this.inUse + next.bytes > this.capacity) return;
      this.waiting.shift();
      this.inUse += next.bytes;
      next.admit();
    }
  }
}

/** A decimal byte count of a Content-Length header; undefined when absent or not a number. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined || !/^\d{1,15}$/.test(header)) return undefined;
  return Number(header);
}

/**
 * Reads a request body into one Buffer: preallocated from the Content-Length when there is one
 * (never more than `limit`), else chunks joined once at the end. More than `limit` bytes: 413,
 * and the rest of the body is discarded unread. Not all there after `withinMs`: 408.
 */
export function readBody(req: IncomingMessage, limit: number, withinMs?: number): Promise<Buffer> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise<Buffer>((resolve, reject) => {
    let buffer: Buffer | undefined = declared === undefined ? undefined : Buffer.allocUnsafe(declared);
    let chunks: Buffer[] = [];
    let received = 0;
    const timer =
      withinMs === undefined
        ? undefined
        : setTimeout(
            () => finish(new AppError(408, 'request_timeout', 'The request body did not arrive in time.')),
            withinMs,
          );
    const finish = (error: Error | undefined): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (error === undefined) {
        const body = buffer ?? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received));
        buffer = undefined;
        chunks = [];
        resolve(body);
        return;
      }
      buffer = undefined;
      chunks = [];
      req.resume(); // the rest is discarded; the error goes out when the request unwinds
      reject(error);
    };
    const onData = (chunk: Buffer): void => {
      if (received + chunk.length > (declared ?? limit)) {
        finish(declared === undefined ? tooLarge(limit) : lengthMismatch());
        return;
      }
      if (buffer === undefined) chunks.push(chunk);
      else chunk.copy(buffer, received);
      received += chunk.length;
    };
    const onEnd = (): void =>
      finish(declared !== undefined && received !== declared ? lengthMismatch() : undefined);
    const onError = (error: Error): void => finish(error);
    const onAborted = (): void => finish(invalidRequest('The client went away while sending the body.'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

/** 413 naming the route's limit in MiB. */
export const tooLarge = (limit: number) =>
  payloadTooLarge(
    `The request body is larger than this route accepts (${Math.floor(limit / 1024 / 1024)} MiB).`,
  );

// A body that does not match its own Content-Length is not valid HTTP; Node aborts it anyway.
const lengthMismatch = (): AppError => invalidRequest('The request body does not match its Content-Length.');
