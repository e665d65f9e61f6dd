import type { Db } from 'mongodb';
import { retellCallObject, simulatorWebhookSecret, type SimulatedCall } from './simulator.js';
import { simulatorPost } from './simulator-http.js';

// The caller of a number ending 2222 asks for a consultation (docs/appointments.md#the-simulator):
// during the call the simulated agent calls the firm's Retell custom functions check_availability
// and book_appointment as Retell would (POST {name, call, args} to the firm's tools URL, signed
// with x-retell-signature), and takes the first free slot. Both are safe to repeat: a retried
// step books nothing more (one booking per call on our side).

export const asksForAppointment = (toNumber: string): boolean => toNumber.endsWith('2222');

/** What the booking part of the conversation came to, for the transcript. */
export interface SimulatedBooking {
  offered: string[];
  booked: { start: string; spoken: string; booking_uid: string } | null;
  said: string;
}

/** The firm's tools URL beside its call webhook URL (…/api/v2/{firm}/webhook → …/tools/{name}). */
const toolUrl = (webhookUrl: string, name: string): string =>
  webhookUrl.replace(/\/webhook$/, `/tools/${name}`);

async function callTool(
  db: Db,
  call: SimulatedCall,
  name: string,
  args: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const body = JSON.stringify({
    name,
    call: retellCallObject(call, 'ongoing'),
    args,
  });
  const secret = await simulatorWebhookSecret(db, call);
  const res = await simulatorPost(toolUrl(call.webhook.url, name), body, secret, 20_000);
  const text = res.body;
  const ok = res.status >= 200 && res.status <= 299;
  // A 4xx is an answer the agent reads out (no provider, a bad slot); a 5xx is retried by the job.
  if (res.status >= 500) throw new Error(`The ${name} tool answered ${res.status}.`);
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    return ok ? parsed : { message: 'I could not do that just now.', error: parsed };
  } catch {
    return { message: 'I could not do that just now.' };
  }
}

/** Checks availability, books the first free slot for the caller; what was said, for the transcript. */
export async function simulateBooking(
  db: Db,
  call: SimulatedCall,
  caller: { name: string; email: string },
): Promise<SimulatedBooking> {
  const check = await callTool(db, call, 'check_availability', {});
  const slots = Array.isArray(check.slots) ? (check.slots as Array<{ start: string; spoken: string }>) : [];
  if (slots.length === 0) {
    return { offered: [], booked: null, said: String(check.message ?? 'There are no free times.') };
  }
  const first = slots[0]!;
  const book = await callTool(db, call, 'book_appointment', {
    start: first.start,
    name: caller.name,
    email: caller.email,
  });
  const booked =
    book.booked === true && typeof book.booking_uid === 'string'
      ? {
          start: String(book.start),
          spoken: String(book.spoken ?? first.spoken),
          booking_uid: book.booking_uid,
        }
      : null;
  return { offered: slots.map((s) => s.spoken), booked, said: String(book.message ?? '') };
}
