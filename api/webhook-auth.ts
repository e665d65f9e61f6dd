import { randomBytes } from 'node:crypto';
import type { Context } from 'koa';
import { firmNotFound, mayActOn } from '../core/domain/access/access.js';
import { firmWebhookKeys, type WebhookKeys } from '../core/domain/firms/webhook-keys.js';
import { forbidden, isMongoUnavailable, unauthorized } from '../core/platform/errors.js';
import type { Services } from '../core/wiring/services.js';
import type { RawBody, WebhookCredentials } from './route.js';
import { authenticateRequest, refuseOtherFirmInQuery } from './router.js';

/** How one sender signs its deliveries (Retell, Cal.com). */
export interface SenderSignature {
  /** The header that carries the signature. */
  header: string;
  /** The `subject` of the principal a signed delivery acts as (rate limits, logs). */
  subject: string;
  /** What to send when the header is absent. */
  missing: string;
  /** Whether the header is well formed (and fresh, where the scheme has a timestamp). */
  wellFormed(signature: string): boolean;
  /** Why a header that is not well formed is refused. */
  malformed: string;
  /** The firm's own keys a delivery to it may be signed with (any one verifies); empty when none. */
  secretsOf(services: Services, firm: WebhookKeys): string[];
  /**
   * Keys the sender signs every firm's deliveries with (Retell's account key): a delivery they
   * verify is marked `sharedKey`, and the route decides whether it is this firm's.
   */
  sharedSecretsOf?(services: Services): string[];
  /** The HMAC check over the raw body. */
  verify(rawBody: RawBody, secret: string, signature: string): boolean | Promise<boolean>;
}

/**
 * The key a signature is checked with when the firm is unknown or has no key of this sender's: a
 * random one no sender has, so the delivery is answered as a wrong signature is, after its body,
 * and counted against the sender's address like it (docs/webhooks.md#authentication-before-the-body).
 */
const NO_ONES_KEY = randomBytes(32).toString('hex');

/**
 * A webhook receiver's authentication (docs/webhooks.md#authentication-before-the-body): the bearer
 * header (the platform key, or a token of this firm), or else the sender's signature with one of the
 * firm's keys. All of it but the HMAC over the body is checked before the body is read; the HMAC is
 * `verifyBody`. To a sender with only a signature, an unknown firm and a firm without a key look
 * exactly like a wrong key: slugs cannot be enumerated nor a firm's keys probed.
 */
export function webhookAuthentication(
  sender: SenderSignature,
): (ctx: Context, services: Services) => Promise<WebhookCredentials> {
  return async (ctx, services) => {
    const slug = String(ctx.params.firm ?? '');
    if (ctx.get('Authorization') !== '') {
      const principal = await authenticateRequest(ctx, services);
      if (!mayActOn(principal, slug)) throw forbidden();
      refuseOtherFirmInQuery(ctx, principal);
      // The firm's keys stand for the firm: while MongoDB is down, their copy says it exists.
      if ((await firmWebhookKeys(services, slug)) === null) throw firmNotFound(slug);
      return { principal, firm: slug };
    }
    const signature = ctx.get(sender.header);
    if (signature === '') throw unauthorized(sender.missing);
    if (!sender.wellFormed(signature)) throw unauthorized(sender.malformed);
    // Only its keys are read (from the cached document itself; from their copy while MongoDB is
    // down). A firm with neither is answered as an unknown one, so an outage enumerates no slugs.
    const firm = await firmWebhookKeys(services, slug).catch((err: unknown) => {
      if (isMongoUnavailable(err)) return null;
      throw err;
    });
    const nonEmpty = (keys: string[]) => keys.filter((secret) => secret !== '');
    const secrets = firm === null ? [] : nonEmpty(sender.secretsOf(services, firm));
    const shared = firm === null ? [] : nonEmpty(sender.sharedSecretsOf?.(services) ?? []);
    const stranger = secrets.length === 0 && shared.length === 0;
    if (stranger) secrets.push(NO_ONES_KEY);
    const credentials: WebhookCredentials = {
      principal: { kind: 'firm', firm: slug, via: 'webhook_signature', subject: sender.subject },
      firm: slug,
      // Its body takes none of the large-body budget (api/middleware/webhook-body.ts).
      stranger,
      verifyBody: async (rawBody) => {
        for (const secret of secrets) if (await sender.verify(rawBody, secret, signature)) return 'signed';
        for (const secret of shared) {
          if (await sender.verify(rawBody, secret, signature)) {
            credentials.sharedKey = true;
            return 'signed';
          }
        }
        return false;
      },
    };
    return credentials;
  };
}
