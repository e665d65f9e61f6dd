import type { IncomingMessage } from 'node:http';
import { RecentMemo } from '../../core/platform/recent-memo.js';
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

  /** Nothing reserved and no one waiting. */
  get idle(): boolean {
    return this.inUse === 0 && this.waiting.length === 0;
  }

  /** Reserves `bytes` (at most `capacity`); resolves to the release function. */
  async reserve(bytes: number, abandoned?: AbortSignal, waitMs = this.waitMs): Promise<() => void> {
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
        Math.max(0, waitMs),
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

/** How long a sender address stays proven for a firm after its last matching signature. */
const PROVEN_FOR_MS = 24 * 3600 * 1000;
/** The most (firm, address) pairs a process remembers as proven (oldest dropped first). */
const PROVEN_KEPT = 10_000;

/**
 * The process's byte budget shared by firms (docs/webhooks.md#large-bodies). A delivery is
 * *proven* when its headers proved it (a bearer token), or when it is signed and its sender's
 * address delivered a matching signature to the same firm within the last 24 h (`prove`: Retell
 * sends a call's small events before its large `call_analyzed`). A proven delivery reserves in its
 * firm's share first (`perFirm` bytes; a body larger than the share takes all of it), then in the
 * process's budget; an unproven one (a first delivery from a new address, or a forgery in any
 * firm's name) reserves in one pool of `unproven` bytes that all of them share, then that much at
 * most of the process's budget. Each in arrival order, within one wait. So forgeries, from any
 * number of addresses and in any firms' names, hold at most the pool, and a proven sender always
 * finds its firm's share in the rest; one firm's proven deliveries hold at most its share. Shares
 * of firms with nothing in flight are dropped: the map holds only the firms being read now.
 */
export class FirmByteBudgets {
  readonly process: ByteBudget;
  readonly unprovenPool: ByteBudget;
  private readonly firms = new Map<string, ByteBudget>();
  private readonly proven = new RecentMemo<string, true>(PROVEN_KEPT, PROVEN_FOR_MS);

  constructor(
    capacity: number,
    readonly perFirm: number,
    unproven: number,
    private readonly waitMs: number,
  ) {
    this.process = new ByteBudget(capacity, waitMs);
    this.unprovenPool = new ByteBudget(Math.min(unproven, capacity), waitMs);
  }

  /** `sender` delivered a matching signature to `firm`: its next deliveries to it are proven. */
  prove(firm: string, sender: string): void {
    this.proven.set(provenKey(firm, sender), true);
  }

  /**
   * Reserves `bytes` for a delivery to `firm`; resolves to the release function (503 after the
   * wait). `sender`: the client address of a delivery that only a signature over its body can
   * prove; absent when its headers proved it.
   */
  async reserve(firm: string, bytes: number, abandoned?: AbortSignal, sender?: string): Promise<() => void> {
    const started = Date.now();
    const rest = (): number => this.waitMs - (Date.now() - started);
    if (sender !== undefined && this.proven.get(provenKey(firm, sender)) === undefined) {
      const releasePool = await this.unprovenPool.reserve(bytes, abandoned);
      try {
        const amount = Math.min(bytes, this.unprovenPool.capacity);
        const releaseProcess = await this.process.reserve(amount, abandoned, rest());
        return () => {
          releaseProcess();
          releasePool();
        };
      } catch (err) {
        releasePool();
        throw err;
      }
    }
    let share = this.firms.get(firm);
    if (share === undefined) this.firms.set(firm, (share = new ByteBudget(this.perFirm, this.waitMs)));
    let releaseShare: (() => void) | undefined;
    try {
      releaseShare = await share.reserve(bytes, abandoned);
      const releaseProcess = await this.process.reserve(bytes, abandoned, rest());
      return () => {
        releaseProcess();
        this.giveBack(firm, releaseShare!);
      };
    } catch (err) {
      if (releaseShare !== undefined) this.giveBack(firm, releaseShare);
      else this.dropIfIdle(firm);
      throw err;
    }
  }

  private giveBack(firm: string, release: () => void): void {
    release();
    this.dropIfIdle(firm);
  }

  private dropIfIdle(firm: string): void {
    if (this.firms.get(firm)?.idle === true) this.firms.delete(firm);
  }
}

const provenKey = (firm: string, sender: string): string => `${firm}|${sender}`;

/** A decimal byte count of a Content-Length header; undefined when absent or not a number. */
export function declaredLength(req: IncomingMessage): number | undefined {
  const header = req.headers['content-length'];
  if (header === undefined || !/^\d{1,15}$/.test(header)) return undefined;
  return Number(header);
}

/** How a body is read: its deadline, the slowest rate accepted, and whether it is kept at all. */
export interface ReadOptions {
  /** Not all there after this many ms: 408. */
  withinMs?: number;
  /**
   * Bytes a second the body must keep arriving at, from `graceMs` after the read began: a sender
   * that falls behind is answered 408 at once (it holds what was reserved for it until then).
   */
  minBytesPerSecond?: number;
  graceMs?: number;
  /** Counted and held to the limit, but not kept (the answer is already known): resolves to an empty Buffer. */
  discard?: boolean;
}

/** How often the read rate is looked at. */
const RATE_CHECK_MS = 250;

/**
 * Reads a request body into one Buffer: preallocated from the Content-Length when there is one
 * (never more than `limit`), else chunks joined once at the end. More than `limit` bytes: 413,
 * and the rest of the body is discarded unread. Not all there after `withinMs`, or arriving
 * slower than `minBytesPerSecond`: 408.
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  options: ReadOptions | number = {},
): Promise<Buffer> {
  const {
    withinMs,
    minBytesPerSecond,
    graceMs = 1_000,
    discard = false,
  } = typeof options === 'number' ? { withinMs: options } : options;
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit) return Promise.reject(tooLarge(limit));
  return new Promise<Buffer>((resolve, reject) => {
    const started = Date.now();
    let buffer: Buffer | undefined =
      declared === undefined || discard ? undefined : Buffer.allocUnsafe(declared);
    let chunks: Buffer[] = [];
    let received = 0;
    const timer =
      withinMs === undefined
        ? undefined
        : setTimeout(
            () => finish(new AppError(408, 'request_timeout', 'The request body did not arrive in time.')),
            withinMs,
          );
    const pace =
      minBytesPerSecond === undefined
        ? undefined
        : setInterval(() => {
            const due = ((Date.now() - started - graceMs) / 1000) * minBytesPerSecond;
            if (received < due && received < (declared ?? Infinity)) finish(tooSlow(minBytesPerSecond));
          }, RATE_CHECK_MS);
    const finish = (error: Error | undefined): void => {
      clearTimeout(timer);
      clearInterval(pace);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (error === undefined) {
        const body = discard
          ? Buffer.alloc(0)
          : (buffer ?? (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received)));
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
      if (!discard) {
        if (buffer === undefined) chunks.push(chunk);
        else chunk.copy(buffer, received);
      }
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

/** 408 for a body arriving slower than the route accepts. */
const tooSlow = (minBytesPerSecond: number): AppError =>
  new AppError(
    408,
    'request_timeout',
    `The request body is arriving too slowly (under ${Math.round(minBytesPerSecond / 1024)} KiB a second); send it again at full speed.`,
  );

/** 413 naming the route's limit in MiB. */
export const tooLarge = (limit: number) =>
  payloadTooLarge(
    `The request body is larger than this route accepts (${Math.floor(limit / 1024 / 1024)} MiB).`,
  );

// A body that does not match its own Content-Length is not valid HTTP; Node aborts it anyway.
const lengthMismatch = (): AppError => invalidRequest('The request body does not match its Content-Length.');
