// Errors that cross the HTTP boundary. Each carries the contract's status and code; the
// error middleware turns them into {"error": {code, message, details?}}.

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
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** The most characters of one request value an error message echoes (CONTRACT §1). */
export const MAX_ECHO = 100;

/** Request text for an error message: the first MAX_ECHO characters, "…" marking a cut. */
export function clip(text: string): string {
  return text.length <= MAX_ECHO ? text : `${text.slice(0, MAX_ECHO)}…`;
}

/** A request value for an error message, in double quotes and clipped: `No firm has the slug ${quote(slug)}.` */
export const quote = (value: unknown): string => `"${clip(String(value))}"`;

export const invalidRequest = (message: string, details?: ErrorDetail[]): AppError =>
  new AppError(400, 'invalid_request', message, details);

export const unauthorized = (message = 'A valid bearer token is required.'): AppError =>
  new AppError(401, 'unauthorized', message, undefined, { 'WWW-Authenticate': 'Bearer realm="intake"' });

export const forbidden = (message = 'This token may not act on that firm.'): AppError =>
  new AppError(403, 'forbidden', message);

export const notFound = (thing: string, message?: string): AppError =>
  new AppError(
    404,
    `${thing}_not_found`,
    message ?? `No ${thing.replace(/_/g, ' ')} was found with that identifier.`,
  );

export const conflict = (code: string, message: string): AppError => new AppError(409, code, message);

/** Redis or MongoDB could not be reached: the work was not stored, so the client should retry. */
export class UnavailableError extends AppError {
  constructor(
    readonly dependency: 'redis' | 'mongodb' | 'provider',
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
];

export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const text = `${err.name} ${err.message}`;
  return REDIS_DOWN.some((s) => text.includes(s));
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
