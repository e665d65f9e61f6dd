import type { Context, Middleware } from 'koa';
import { invalidRequest, unauthorized, unsupportedMediaType } from '../../core/platform/errors.js';
import type { RawBody, WebhookCredentials } from '../route.js';
import { FirmByteBudgets, declaredLength, readBody, tooLarge } from './body-budget.js';
import type { Config } from '../../core/platform/config.js';
import { limitAddress } from '../../core/platform/client-address.js';
import { handleNul, isJsonRequest, MAX_JSON_DEPTH, nestedDeeperThan } from './body.js';

// The bytes of large bodies a web process reads at once (WEBHOOK_BODY_BUDGET_BYTES, 48 MiB), one
// firm's share of them for its proven deliveries (WEBHOOK_BODY_BUDGET_PER_FIRM_BYTES, 32 MiB: one
// body of the largest size), and the pool that unproven ones share (WEBHOOK_BODY_BUDGET_UNPROVEN_BYTES,
// 16 MiB), so one firm leaves room for the others and forgeries in any name leave room for proven
// senders: see FirmByteBudgets. The
// process's peak grows by about four times the budget when it is all in use (bench/webhook-rss.ts).
/** Bodies declared no larger than every other route's limit take no room: they never wait. */
const SMALL_BODY_BYTES = 2 * 1024 * 1024;
/**
 * How long a budgeted body may take to arrive (Retell itself gives up after 10 s): a sender that
 * trickles cannot hold the budget for longer.
 */
const LARGE_BODY_READ_MS = 15_000;
/** How long a delivery waits for room before it is answered 503 (Retell gives up after 10 s). */
export const LARGE_BODY_WAIT_MS = 5_000;

/** A process's budget for the large webhook bodies it reads at once, as its configuration sets it. */
export const largeBodyBudgetsOf = (
  config: Pick<
    Config,
    'webhookBodyBudgetBytes' | 'webhookBodyBudgetPerFirmBytes' | 'webhookBodyBudgetUnprovenBytes'
  >,
): FirmByteBudgets =>
  new FirmByteBudgets(
    config.webhookBodyBudgetBytes,
    config.webhookBodyBudgetPerFirmBytes,
    config.webhookBodyBudgetUnprovenBytes,
    LARGE_BODY_WAIT_MS,
  );

/** The 401 of a signature that does not match its body. */
const signatureMismatch = () => unauthorized('The webhook signature does not match the body.');

/**
 * Checks a webhook delivery's signature over its raw body (401 when it does not match) and notes
 * how the body proved itself in `ctx.state.webhookProof` for the rate limits (api/router.ts).
 */
export async function verifyWebhookBody(ctx: Context, rawBody: RawBody): Promise<void> {
  const { verifyBody } = ctx.state.webhook as WebhookCredentials;
  if (verifyBody === undefined) return; // a bearer token: nothing in the body to check
  const proof = await verifyBody(rawBody);
  if (proof === false) throw signatureMismatch();
  ctx.state.webhookProof = proof;
}

/**
 * A webhook body that may be large (the call webhook: up to 32 MiB, docs/webhooks.md#large-bodies), with
 * one copy of it in memory at a time: read into one Buffer under its firm's share of the process's
 * byte budget, the signature checked over those bytes, then decoded once and parsed once, each copy
 * let go as the next is made. The route's own authentication ran before (firm, bearer, signature
 * form and window, the firm's secret): nothing is read for a request refused on those. A sender
 * whose firm does not exist or has no key (its signature cannot match) takes no budget: its body
 * is read and dropped as it comes, then answered 401 as a wrong signature is. Every body must keep
 * arriving at `minBytesPerSecond` (a trickle is dropped with 408) and be all there within 15 s.
 */
export function largeWebhookBody(
  limitBytes: number,
  budgets: FirmByteBudgets,
  minBytesPerSecond: number,
  /** What follows a matching signature, before the body is decoded (the firm's count). */
  proven: (ctx: Context) => Promise<void> = async () => {},
): Middleware {
  return async (ctx, next) => {
    const hasBody = ctx.req.headers['transfer-encoding'] !== undefined || (declaredLength(ctx.req) ?? 0) > 0;
    if (hasBody && !isJsonRequest(ctx)) {
      throw unsupportedMediaType('Send the body as JSON with Content-Type: application/json.');
    }
    const declared = declaredLength(ctx.req);
    if (declared !== undefined && declared > limitBytes) throw tooLarge(limitBytes);
    const credentials = ctx.state.webhook as WebhookCredentials;
    const reading = { minBytesPerSecond, withinMs: LARGE_BODY_READ_MS };
    if (credentials.stranger === true) {
      if (hasBody) await readBody(ctx.req, limitBytes, { ...reading, discard: true });
      throw signatureMismatch();
    }
    const small = declared !== undefined && declared <= SMALL_BODY_BYTES;
    let release: () => void = () => {};
    if (!small) {
      // Room for the declared length (the whole limit for a body sent without one), in the firm's
      // share; a client that goes away meanwhile stops waiting.
      const gone = new AbortController();
      const onClose = (): void => gone.abort();
      ctx.req.once('close', onClose);
      try {
        // A signed delivery is proven by its body: until its address has proven itself to the
        // firm, it reads in the pool of unproven ones.
        const sender = credentials.verifyBody === undefined ? undefined : limitAddress(ctx.ip);
        release = await budgets.reserve(credentials.firm, declared ?? limitBytes, gone.signal, sender);
      } finally {
        ctx.req.off('close', onClose);
      }
    }
    try {
      let bytes: Buffer | undefined = hasBody
        ? await readBody(ctx.req, limitBytes, small ? { minBytesPerSecond } : reading)
        : Buffer.alloc(0);
      await verifyWebhookBody(ctx, bytes);
      await proven(ctx);
      let text: string | undefined = bytes.toString('utf8');
      bytes = undefined; // the text is the only copy from here on
      let body: unknown = {};
      if (text.trim() !== '') {
        try {
          body = JSON.parse(text);
        } catch {
          throw invalidRequest('The request body is not valid JSON.');
        }
      }
      // JSON writes NUL only as this escape (`\u` is lower case, `0000` has no case).
      const mayHoldNul = text.includes('\\u0000');
      text = undefined; // the parsed body is the only copy from here on
      if (nestedDeeperThan(body, MAX_JSON_DEPTH)) {
        throw invalidRequest(
          `The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels; send flatter data.`,
        );
      }
      // A sender's text is kept with U+FFFD where it held the NUL character (as jsonBody does).
      if (mayHoldNul) handleNul(body, true);
      (ctx.request as { body?: unknown }).body = body;
      body = undefined;
      await next();
    } finally {
      release();
    }
  };
}
