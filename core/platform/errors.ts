// Errors that cross the HTTP boundary. Each carries its status and code (docs/errors.md#statuses); the
// error middleware turns them into {"error": {code, message, details?}}. Build them with the
// named constructors below, so a status and its code are written in one place.

export interface ErrorDetail {
  path: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string | string[]>,
    /** Named fields of the error body beside code, message and details (e.g. `retry_at`). */
    readonly fields?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/**
 * The most characters of one request value an error message echoes
 * (docs/errors.md#limits-on-every-request).
 */
const MAX_ECHO = 100;

/** Request text for an error message: the first MAX_ECHO characters, "…" marking a cut. */
export function clip(text: string): string {
  return text.length <= MAX_ECHO ? text : `${text.slice(0, MAX_ECHO)}…`;
}

/** A request value for an error message, in double quotes and clipped: `No firm has the slug ${quote(slug)}.` */
export const quote = (value: unknown): string => `"${clip(String(value))}"`;

/** 400 invalid_request, or a more precise 400 code (e.g. unknown_voice; docs/errors.md#statuses). */
export const invalidRequest = (
  message: string,
  details?: ErrorDetail[],
  code = 'invalid_request',
): AppError => new AppError(400, code, message, details);

/** 401 with the challenge exactly as the contract writes it (`WWW-Authenticate: Bearer`). */
export const unauthorized = (message = 'A valid bearer token is required.'): AppError =>
  new AppError(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer' });

export const forbidden = (
  message = 'This token may not act on that firm.',
  details?: ErrorDetail[],
): AppError => new AppError(403, 'forbidden', message, details);

export const notFound = (thing: string, message?: string): AppError =>
  new AppError(
    404,
    `${thing}_not_found`,
    message ?? `No ${thing.replace(/_/g, ' ')} was found with that identifier.`,
  );

export const conflict = (code: string, message: string): AppError => new AppError(409, code, message);

/** A repeat of a request whose Idempotency-Key is still pending: retry after `retryAfterSeconds`. */
export const idempotencyKeyInUse = (retryAfterSeconds: number): AppError =>
  new AppError(
    409,
    'idempotency_key_in_use',
    'A request with this Idempotency-Key is still being processed; retry after the Retry-After seconds.',
    undefined,
    { 'Retry-After': String(retryAfterSeconds) },
  );

/**
 * 409 dial_blocked: the dial gate refuses the number; `details` name the rule, and `retryAt` when
 * the rule lets the number be dialled later (the frequency cap: `retry_at` in the body).
 */
export const dialBlocked = (message: string, details: ErrorDetail[], retryAt?: number): AppError =>
  new AppError(
    409,
    'dial_blocked',
    message,
    details,
    undefined,
    retryAt === undefined ? undefined : { retry_at: new Date(retryAt).toISOString() },
  );

/** 409 dial_deferred: the dial gate allows the number only from `retryAt` (in the body and Retry-After). */
export const dialDeferred = (
  message: string,
  details: ErrorDetail[],
  retryAt: number,
  now: number,
): AppError =>
  new AppError(
    409,
    'dial_deferred',
    message,
    details,
    { 'Retry-After': String(Math.max(1, Math.ceil((retryAt - now) / 1000))) },
    { retry_at: new Date(retryAt).toISOString() },
  );

export const payloadTooLarge = (message = 'The request body is larger than this route accepts.'): AppError =>
  new AppError(413, 'payload_too_large', message);

/** 413 too_many_rows: a batch with more rows than the route takes in one request. */
export const tooManyRows = (message: string): AppError => new AppError(413, 'too_many_rows', message);

export const unsupportedMediaType = (message: string): AppError =>
  new AppError(415, 'unsupported_media_type', message);

export const rateLimited = (message: string, retryAfterSeconds: number): AppError =>
  new AppError(429, 'rate_limited', message, undefined, { 'Retry-After': String(retryAfterSeconds) });

/** A 502: an outside system refused our request in a way retrying will not fix. */
export const badGateway = (code: string, message: string): AppError => new AppError(502, code, message);

/** A 503 for a reason other than Redis or MongoDB (shutting down, a provider saturated). */
export const serviceUnavailable = (
  message: string,
  retryAfterSeconds = 5,
  details?: ErrorDetail[],
): AppError =>
  new AppError(503, 'unavailable', message, details, { 'Retry-After': String(retryAfterSeconds) });

export const internalError = (): AppError =>
  new AppError(500, 'internal_error', 'Something went wrong on our side; it has been logged.');

/** Redis or MongoDB could not be reached: the work was not stored, so the client should retry. */
export class UnavailableError extends AppError {
  constructor(
    readonly dependency: 'redis' | 'mongodb',
    cause?: unknown,
  ) {
    super(
      503,
      'unavailable',
      `The service is temporarily unavailable (${dependency}); retry shortly.`,
      undefined,
      {
        'Retry-After': '5',
      },
    );
    this.name = 'UnavailableError';
    if (cause !== undefined) this.cause = cause;
  }
}

const REDIS_DOWN = [
  "Stream isn't writeable",
  'Connection is closed',
  'MaxRetriesPerRequestError',
  'ECONNREFUSED',
  'Reached the max retries per request limit',
  // A producer's command with no reply in time (a Redis that is stopped or cut off: redis.ts).
  'Command timed out',
];

export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const text = `${err.name} ${err.message}`;
  return REDIS_DOWN.some((s) => text.includes(s));
}

/**
 * Redis refusing a write because it is at its `maxmemory` (an `OOM command not allowed` reply,
 * under the `noeviction` policy that queues need): for a delivery, like Redis down.
 */
export function isRedisOutOfMemory(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('OOM ');
}

const MONGO_DOWN = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'PoolClearedError',
  'PoolClearedOnNetworkError',
]);

export function isMongoUnavailable(err: unknown): boolean {
  return err instanceof Error && MONGO_DOWN.has(err.name);
}
