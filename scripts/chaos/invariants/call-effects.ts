import { COLLECTIONS } from '../../../core/platform/db/collections.js';
import { notificationMessageId } from '../../../core/domain/call-analysis/notifications.js';
import { countBy, row, summary, timesBy, type Row } from './rows.js';
import { EFFECTS, type CallFacts, type CallRow, type CheckContext } from './context.js';

/** call_analyzed: delivered twice, and each ended call has exactly one lead, mail, Slack message, Clio contact and matter. */
export async function callEffectRows(ctx: CheckContext, facts: CallFacts): Promise<Row[]> {
  const { cluster, ledger } = ctx;
  const { calls, callFirms } = facts;
  const rows: Row[] = [];
  const db = cluster.db;
  const analysed = calls.filter((c) => c.status === 'ended');
  const proxied = cluster.proxy.deliveries.filter((d) => d.event === 'call_analyzed' && d.status === 200);
  const firstOk = new Set(proxied.map((d) => d.callId));
  const copyOk = new Map<string, number>();
  for (const c of ledger.copies) if (c.status === 200) copyOk.set(c.callId, (copyOk.get(c.callId) ?? 0) + 1);
  const twiceBad = analysed
    .filter((c) => !firstOk.has(c._id) || copyOk.get(c._id) !== 1)
    .map(
      (c) => `${c._id}: simulator ${firstOk.has(c._id) ? 'ok' : 'missing'}, copy ${copyOk.get(c._id) ?? 0}`,
    );
  rows.push(
    row(
      'call_analyzed delivered twice (simulator + signed copy), both 200',
      `${analysed.length} calls × 2`,
      summary(analysed.length, twiceBad),
      twiceBad.length === 0,
    ),
  );

  const leads = (await db
    .collection(COLLECTIONS.leads)
    .find({ firm: { $in: callFirms }, source: 'call' }, { projection: { call_id: 1 } })
    .toArray()) as unknown as Array<{ call_id: string }>;
  const leadsByCall = countBy(leads.map((l) => l.call_id));
  const mailTimes = timesBy(cluster.smtp.messages.map((m) => [m.header('message-id') ?? '', m.at]));
  const mailBase = cluster.env.PUBLIC_BASE_URL!;
  const slackTimes = timesBy(
    cluster.slack.messages().flatMap((m) => {
      // The message links to the call record (get-call/<call id>).
      const ids = new Set(
        [...JSON.stringify(m.body).matchAll(/get-call\/(call_[A-Za-z0-9_-]+)/g)].map((x) => x[1]!),
      );
      return [...ids].map((id) => [id, m.at] as [string, number]);
    }),
  );
  const clioByEmail = countBy(
    cluster.clio.contacts.flatMap((c) => c.email_addresses.map((e) => e.address.toLowerCase())),
  );
  const mattersByCall = countBy(cluster.clio.matters.map((m) => m.client_reference ?? ''));
  const per = (name: string, count: (c: CallRow) => number) => {
    const bad = analysed.filter((c) => count(c) !== 1).map((c) => `${c._id}: ${count(c)}`);
    rows.push(row(name, `${analysed.length} × 1`, summary(analysed.length, bad), bad.length === 0));
  };
  /**
   * Mail and Slack cannot be asked whether a send went through: a worker that dies between the
   * send and its record leaves the outcome unknown, and the next attempt sends again (at least
   * once, never lost: docs/architecture.md#claims-record-locks-and-effects). A repeat is accepted only
   * when a worker ended abruptly between the first send and its record (Ledger.explainsRepeat);
   * any other repeat is a bug.
   */
  const perSend = (name: string, times: (c: CallRow) => number[]) => {
    const bad: string[] = [];
    let repeats = 0;
    for (const c of analysed) {
      const t = times(c).sort((a, b) => a - b);
      if (t.length === 0) bad.push(`${c._id}: none`);
      for (let i = 1; i < t.length; i++) {
        const explained = ledger.explainsRepeat(t[i - 1]!, t[i]!);
        if (explained) repeats++;
        else
          bad.push(
            `${c._id}: repeated ${((t[i]! - t[i - 1]!) / 1000).toFixed(1)} s later (first ${new Date(t[i - 1]!).toISOString().slice(11, 23)}), no worker died between`,
          );
      }
    }
    rows.push(
      row(
        name,
        `${analysed.length} × 1 (a repeat only after a SIGKILL between send and record)`,
        bad.length === 0
          ? `${analysed.length}${repeats > 0 ? ` + ${repeats} repeated after a SIGKILL` : ''}`
          : summary(analysed.length, bad),
        bad.length === 0,
      ),
    );
    return repeats;
  };
  per('each call_analyzed: exactly one lead', (c) => leadsByCall.get(c._id) ?? 0);
  const mailRepeats = perSend(
    'each call_analyzed: exactly one notification mail',
    (c) => mailTimes.get(notificationMessageId(c._id, mailBase)) ?? [],
  );
  const slackRepeats = perSend(
    'each call_analyzed: exactly one Slack message',
    (c) => slackTimes.get(c._id) ?? [],
  );
  per('each call_analyzed: exactly one Clio contact', (c) =>
    c.extraction?.email ? (clioByEmail.get(c.extraction.email.toLowerCase()) ?? 0) : -1,
  );
  per('each call_analyzed: exactly one Clio matter', (c) => mattersByCall.get(c._id) ?? 0);
  const effectBad = analysed
    .filter((c) => EFFECTS.some((e) => c.effects?.[e]?.state !== 'done'))
    .map((c) => `${c._id}: ${EFFECTS.map((e) => `${e}=${c.effects?.[e]?.state ?? '-'}`).join(' ')}`);
  rows.push(
    row(
      'each call_analyzed: lead, crm, email, team_chat all done',
      analysed.length,
      summary(analysed.length, effectBad),
      effectBad.length === 0,
    ),
  );
  const notificationMails = cluster.smtp.messages.filter((m) =>
    (m.header('message-id') ?? '').includes('call-notification'),
  ).length;
  const slackMessages = cluster.slack.messages().length;
  rows.push(
    row(
      'nothing else: leads, mails, Slack messages, Clio contacts and matters',
      `${analysed.length} each (+ repeats above)`,
      `${leads.length} leads, ${notificationMails} mails, ${slackMessages} Slack, ${cluster.clio.contacts.length} contacts, ${cluster.clio.matters.length} matters`,
      leads.length === analysed.length &&
        notificationMails === analysed.length + mailRepeats &&
        slackMessages === analysed.length + slackRepeats &&
        cluster.clio.contacts.length === analysed.length &&
        cluster.clio.matters.length === analysed.length,
    ),
  );
  return rows;
}
