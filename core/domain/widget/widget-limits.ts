// The widget's abuse limits kept in Redis (docs/widget.md#limits), so every web process shares
// them: sessions per client address per widget key per clock hour, and messages per widget
// session, per visitor address and per firm per UTC day. Each is a counter per fixed window (INCR, expiring when the window ends): a request
// over the limit is answered 429 with Retry-After, the seconds until the window ends.
import { DEFAULT_WIDGET_DAILY_MESSAGE_CAP } from '../firms/firm-settings.js';
import { getFirm } from '../firms/firms.js';
import { sha256Hex } from '../../platform/crypto.js';
import { limitAddress } from '../../platform/client-address.js';
import { rateLimited } from '../../platform/errors.js';
import { redisKeys } from '../../platform/redis-keys.js';
import type { Services } from '../../wiring/services.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Counts one more in the window `key` names; returns the count and the seconds the window has left. */
async function countInWindow(
  services: Services,
  key: (window: number) => string,
  windowMs: number,
): Promise<{ count: number; retryAfter: number }> {
  const now = Date.now();
  const window = Math.floor(now / windowMs);
  const name = key(window);
  const replies = await services.redis
    .multi()
    .incr(name)
    .pexpireat(name, (window + 1) * windowMs)
    .exec();
  const [err, count] = replies?.[0] ?? [new Error('The widget limit count was not taken.'), 0];
  if (err) throw err;
  return { count: Number(count), retryAfter: Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000)) };
}

/** One more widget session of this address with this key this hour; 429 past the limit. */
export async function countWidgetSession(services: Services, keyId: string, address: string): Promise<void> {
  const limit = services.config.widgetSessionsPerAddressPerHour;
  const keys = redisKeys(services.config);
  const digest = sha256Hex(limitAddress(address)).slice(0, 32);
  const { count, retryAfter } = await countInWindow(
    services,
    (hour) => keys.widgetSessions(keyId, digest, hour),
    HOUR_MS,
  );
  if (count > limit) {
    throw rateLimited(
      `This address has opened ${limit} widget sessions with this key this hour; retry in ${retryAfter} s.`,
      retryAfter,
    );
  }
}

/**
 * One more message from the firm's widget visitors today (UTC); 429 past the firm's
 * widget_daily_message_cap. Every message sent with a widget token counts, before it is
 * answered: the cap bounds what the chat engine (an LLM when OPENAI_API_KEY is set) is asked.
 * The visitor's own shares are counted first, and a message refused by them is not counted
 * against the firm: the session's (WIDGET_MESSAGES_PER_SESSION; a token lives an hour, so its
 * count is kept for the day) and the visitor address's with this firm
 * (WIDGET_MESSAGES_PER_ADDRESS_PER_DAY), so one visitor cannot spend the firm's cap.
 */
export async function countWidgetMessage(
  services: Services,
  visitor: { firm: string; subject: string },
  address: string,
): Promise<void> {
  const { firm } = visitor;
  const keys = redisKeys(services.config);
  const session = await countInWindow(
    services,
    (day) => keys.widgetVisitorMessages(firm, 'session', sha256Hex(visitor.subject).slice(0, 32), day),
    DAY_MS,
  );
  const perSession = services.config.widgetMessagesPerSession;
  if (session.count > perSession) {
    throw rateLimited(
      `This chat session has sent its ${perSession} messages; reload the page to start a new session.`,
      HOUR_MS / 1000,
    );
  }
  const fromAddress = await countInWindow(
    services,
    (day) => keys.widgetVisitorMessages(firm, 'address', sha256Hex(limitAddress(address)).slice(0, 32), day),
    DAY_MS,
  );
  const perAddress = services.config.widgetMessagesPerAddressPerDay;
  if (fromAddress.count > perAddress) {
    throw rateLimited(
      `This address has sent ${perAddress} messages to this firm's chat widget today (UTC); retry in ${fromAddress.retryAfter} s.`,
      fromAddress.retryAfter,
    );
  }
  const doc = await getFirm(services.mongo.db, firm);
  const cap = doc?.settings.widget_daily_message_cap ?? DEFAULT_WIDGET_DAILY_MESSAGE_CAP;
  const { count, retryAfter } = await countInWindow(
    services,
    (day) => keys.widgetMessages(firm, day),
    DAY_MS,
  );
  if (count > cap) {
    throw rateLimited(
      `This firm's chat widget has used its ${cap} messages for today (UTC); retry in ${retryAfter} s.`,
      retryAfter,
    );
  }
}
