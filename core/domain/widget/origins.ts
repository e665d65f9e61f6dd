import { AppError, quote } from '../../platform/errors.js';

// The refusal of a page whose origin a widget key or token does not allow (origins:
// core/platform/origins.ts).

/** 403 origin_not_allowed: the page asking is not on one of the key's origins, or not the token's. */
export const originNotAllowed = (origin: string | undefined, holder: 'key' | 'token' = 'key'): AppError =>
  new AppError(
    403,
    'origin_not_allowed',
    origin === undefined
      ? 'The request has no Origin header: a widget key works only from a web page on one of its allowed origins.'
      : holder === 'key'
        ? `The origin ${quote(origin)} is not one of this widget key's allowed origins; add it to allowed_origins.`
        : `This widget token was issued to another origin than ${quote(origin)}; ask for a session from this page.`,
  );
