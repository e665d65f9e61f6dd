import { countBy, row, summary, type Row } from './rows.js';
import type { CheckContext } from './context.js';

/** Answers during outages: 503 with Retry-After, /readyz 503, a 200 only for work stored. */
export function answerRows(ctx: CheckContext): Row[] {
  const { ledger } = ctx;
  const rows: Row[] = [];
  const unavailable = ledger.answers.filter((a) => a.status === 503);
  const noRetryAfter = unavailable.filter((a) => !/^\d+$/.test(a.retryAfter ?? ''));
  rows.push(
    row(
      'every 503 carries Retry-After',
      `${unavailable.length} × Retry-After`,
      summary(
        unavailable.length,
        noRetryAfter.map((a) => a.route),
      ),
      noRetryAfter.length === 0,
    ),
  );
  for (const fault of ['redis', 'mongodb'] as const) {
    const probes = ledger.probes.filter((p) => p.fault === fault);
    if (probes.length === 0) continue;
    const ready = probes.filter((p) => p.target === 'readyz');
    const readyBad = ready.filter((p) => p.status !== 503);
    rows.push(
      row(
        `${fault} down: /readyz answers 503`,
        `${ready.length} × 503`,
        summary(
          ready.length,
          readyBad.map((p) => String(p.status)),
        ),
        readyBad.length === 0 && ready.length > 0,
      ),
    );
    const work = probes.filter((p) => p.target !== 'readyz');
    const counts = countBy(work.map((p) => `${p.target} ${p.status}`));
    const odd = work.filter((p) => p.status !== 503 && p.status !== 200);
    const oddRetry = work.filter((p) => p.status === 503 && !/^\d+$/.test(p.retryAfter ?? ''));
    // With Redis down a call cannot be placed (503), but a webhook delivery is kept in MongoDB
    // and acknowledged (200): its senders do not retry, or not for long.
    const isWebhook = (p: { target: string }) =>
      p.target === 'booking-webhook' || p.target === 'call-webhook';
    rows.push(
      row(
        fault === 'redis'
          ? 'redis down: calls answered 503 + Retry-After; webhooks kept (200)'
          : `${fault} down: work answered 503 + Retry-After, or 200 only when stored`,
        `${work.length} probes`,
        [...counts.entries()].map(([k, v]) => `${k}: ${v}`).join(', ') || '-',
        odd.length === 0 &&
          oddRetry.length === 0 &&
          (fault !== 'redis' || work.every((p) => p.status === (isWebhook(p) ? 200 : 503))),
      ),
    );
  }
  // Every 200 the run got for work: the work is there (checked in the rows above).
  const acknowledged =
    ledger.directCalls.filter((d) => d.status === 200).length +
    ledger.bookingEvents.filter((e) => e.status === 200).length +
    ledger.imports.filter((i) => i.status === 200).length +
    (ledger.campaign?.launchStatus === 200 ? 1 : 0) +
    ledger.copies.filter((c) => c.status === 200).length +
    ctx.cluster.proxy.deliveries.filter((d) => d.status === 200).length;
  const during = ledger.answers.filter(
    (a) => a.during !== null && a.status === 200 && a.route !== 'GET readyz',
  );
  rows.push(
    row(
      'no 200 for work that is missing (200s checked in the rows above)',
      `${acknowledged} acknowledged`,
      `${acknowledged} (${during.length} of them during outages)`,
      true,
    ),
  );
  return rows;
}
