// What a widget chat may book (docs/widget.md#bookings): the visitor is anonymous and the email
// they give is anyone's (Cal.com mails it; reminders follow), so a booking from a widget chat
// needs, besides one booking per chat (conversation-booking.ts):
// - a proof of work before the booking step: the chat's widget key asks for ALTCHA and the session
//   was opened with a solved challenge (core/domain/widget/altcha.ts; the token says so); a key
//   without one, or a session opened before the key asked for one, has the chat offer no times
//   (the intake goes on, the firm calls back). The test page's tokens (minted
//   for a signed-in firm user or the platform) have no key and need none;
// - one booking per visitor address (its IPv6 /64) per firm per UTC day, all chats together: the
//   address is claimed for the chat that books (Redis SET NX), so that chat may move its booking
//   and no other chat from the address books that day;
// - at most the firm's widget_daily_booking_cap bookings (default WIDGET_DAILY_BOOKING_CAP) per UTC
//   day, all visitors together: a Redis counter (INCR is atomic; nothing relies on FerretDB's $inc).
// A reservation whose booking did not happen (the slot was taken, Cal.com failed) is given back.
import { limitAddress } from '../../platform/client-address.js';
import { sha256Hex } from '../../platform/crypto.js';
import { redisKeys } from '../../platform/redis-keys.js';
import type { Services } from '../../wiring/services.js';
import type { FirmDoc } from '../firms/firms.js';
import { findWidgetKey } from '../widget/widget-keys.js';

/** Who sends a widget chat's message: their address, and the widget key of their session (if any). */
export interface ChatVisitor {
  address: string;
  /** The widget key's id (a key session's token); absent for the test page's tokens. */
  key?: string;
  /** Whether the key session solved an ALTCHA challenge when it was opened. */
  altcha?: boolean;
}

const DAY_MS = 86_400_000;

/**
 * Whether the visitor's chat may offer and book times: it has no key, or its key asks for ALTCHA
 * and its session solved a challenge (a session opened before the key asked for one solved none).
 */
export async function visitorMayBook(services: Services, visitor: ChatVisitor): Promise<boolean> {
  if (visitor.key === undefined) return true;
  if (visitor.altcha !== true) return false;
  const key = await findWidgetKey(services.mongo.db, visitor.key);
  return key?.challenge === 'altcha';
}

export type Reservation =
  /** A new booking may be made; give it back with `release` if none is. */
  | { kind: 'reserved'; release: () => Promise<void> }
  /** This chat booked for the address today already: it may move its booking. */
  | { kind: 'held' }
  | { kind: 'address_used' | 'firm_cap' };

/** Reserves the visitor address's booking of the day, and one of the firm's, for `chatId`. */
export async function reserveWidgetBooking(
  services: Services,
  firm: FirmDoc,
  chatId: string,
  visitor: ChatVisitor,
): Promise<Reservation> {
  const keys = redisKeys(services.config);
  const day = Math.floor(Date.now() / DAY_MS);
  const endOfDay = (day + 1) * DAY_MS;
  const address = keys.widgetBookingAddress(
    firm._id,
    sha256Hex(limitAddress(visitor.address)).slice(0, 32),
    day,
  );
  const claimed = await services.redis.set(address, chatId, 'PXAT', endOfDay, 'NX');
  if (claimed === null) {
    return (await services.redis.get(address)) === chatId ? { kind: 'held' } : { kind: 'address_used' };
  }
  const freeAddress = async () => {
    if ((await services.redis.get(address)) === chatId) await services.redis.del(address);
  };
  const counter = keys.widgetBookings(firm._id, day);
  const replies = await services.redis.multi().incr(counter).pexpireat(counter, endOfDay).exec();
  const [err, count] = replies?.[0] ?? [new Error('The widget booking count was not taken.'), 0];
  if (err) {
    await freeAddress();
    throw err;
  }
  const cap = firm.settings.widget_daily_booking_cap ?? services.config.widgetDailyBookingCap;
  if (Number(count) > cap) {
    await services.redis.decr(counter);
    await freeAddress();
    return { kind: 'firm_cap' };
  }
  return {
    kind: 'reserved',
    release: async () => {
      await services.redis.decr(counter);
      await freeAddress();
    },
  };
}
