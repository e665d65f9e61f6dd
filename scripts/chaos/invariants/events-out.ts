import { Webhook } from 'standardwebhooks';
import { COLLECTIONS } from '../../../core/platform/db/collections.js';
import type { ReceivedDelivery } from '../../../test/fakes/webhook-receiver.js';
import { row, summary, type Row } from './rows.js';
import type { CheckContext } from './context.js';

// Events out (docs/events.md): each firm of the run subscribed one endpoint to every event (`*`).
// Every event the service recorded for a firm reached that endpoint at least once (its first
// delivery answered 2xx by the receiver), with a signature the firm's secret verifies, and nothing
// arrived that the service did not record (a ping aside): worker SIGKILLs and Redis restarts
// may repeat a delivery, never lose or invent one.

export interface RecordedEvent {
  id: string;
  firm: string;
  type: string;
}

export interface EventsOutFindings {
  recorded: number;
  /** Recorded events with no accepted delivery. */
  missing: string[];
  /** Accepted deliveries whose id is no recorded event of that firm (or of another type). */
  invented: string[];
  /** Deliveries whose signature the firm's secret did not verify. */
  unverified: string[];
  /** Deliveries of an event beyond its first (at least once allows them). */
  repeats: number;
}

/**
 * The findings from what was recorded and what each firm's receiver accepted; `verify` checks a
 * delivery's signature with its firm's secret (true when it holds).
 */
export function eventsOutFindings(
  events: readonly RecordedEvent[],
  acceptedByFirm: ReadonlyMap<string, readonly ReceivedDelivery[]>,
  verify: (firm: string, delivery: ReceivedDelivery) => boolean,
): EventsOutFindings {
  const recorded = new Map(events.map((e) => [`${e.firm}|${e.id}`, e]));
  const seen = new Map<string, number>();
  const invented: string[] = [];
  const unverified: string[] = [];
  for (const [firm, deliveries] of acceptedByFirm) {
    for (const d of deliveries) {
      const id = d.headers['webhook-id'] ?? '(no webhook-id)';
      if (!verify(firm, d)) unverified.push(`${firm}/${id}`);
      let type: unknown;
      try {
        type = (JSON.parse(d.body) as { type?: unknown }).type;
      } catch {
        type = undefined;
      }
      if (type === 'ping') continue;
      const event = recorded.get(`${firm}|${id}`);
      if (event === undefined || event.type !== type) {
        invented.push(`${firm}/${id}`);
        continue;
      }
      seen.set(`${firm}|${id}`, (seen.get(`${firm}|${id}`) ?? 0) + 1);
    }
  }
  const missing = [...recorded.keys()].filter((k) => !seen.has(k)).map((k) => k.replace('|', '/'));
  const repeats = [...seen.values()].reduce((n, c) => n + c - 1, 0);
  return { recorded: recorded.size, missing, invented, unverified, repeats };
}

/**
 * Whether one of the delivery's signatures is the signer's for its id, timestamp and body (the
 * library's own signing, so a check after the run is not refused for the delivery's age).
 */
export function signedBy(signer: Webhook, d: Pick<ReceivedDelivery, 'headers' | 'body'>): boolean {
  const id = d.headers['webhook-id'];
  const timestamp = Number(d.headers['webhook-timestamp']);
  if (id === undefined || !Number.isInteger(timestamp)) return false;
  const expected = signer.sign(id, new Date(timestamp * 1000), d.body);
  return (d.headers['webhook-signature'] ?? '').split(' ').includes(expected);
}

export async function eventsOutRows(ctx: CheckContext): Promise<Row[]> {
  const firms = Object.values(ctx.firms).filter((f) => f.events !== undefined);
  const events = (await ctx.cluster.db
    .collection(COLLECTIONS.events)
    .find({ firm: { $in: firms.map((f) => f.slug) } }, { projection: { firm: 1, type: 1 } })
    .toArray()) as unknown as Array<{ _id: string; firm: string; type: string }>;
  const accepted = new Map(firms.map((f) => [f.slug, ctx.cluster.events.accepted(f.events!.path)]));
  const signers = new Map(firms.map((f) => [f.slug, new Webhook(f.events!.secret)]));
  const findings = eventsOutFindings(
    events.map((e) => ({ id: e._id, firm: e.firm, type: e.type })),
    accepted,
    (firm, d) => signedBy(signers.get(firm)!, d),
  );
  ctx.say(`events out: ${findings.recorded} recorded, ${findings.repeats} delivered more than once`);
  return [
    row(
      'events out: every recorded event delivered at least once',
      `${findings.recorded} delivered`,
      summary(findings.recorded, findings.missing),
      findings.missing.length === 0,
    ),
    row(
      'events out: no delivery of an event never recorded',
      0,
      summary(0, findings.invented),
      findings.invented.length === 0,
    ),
    row(
      "events out: every delivery verifies with its firm's secret",
      0,
      summary(0, findings.unverified),
      findings.unverified.length === 0,
    ),
  ];
}
