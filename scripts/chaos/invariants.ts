// The end of a chaos run: wait until the service has finished everything it acknowledged, then
// hold it to the invariants, checked against the fakes (what the outside world received), the
// database and Redis (what the service stored), and the ledger (what it answered).
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import { QUEUE, QUEUE_NAMES } from '../../jobs/queues.js';
import { notificationMessageId } from '../../core/domain/call-analysis/notifications.js';
import { reminderMessageId } from '../../core/domain/bookings/reminder-mail.js';
import type { ReminderRecord } from '../../core/domain/bookings/reminder-records.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import type { Cluster } from './cluster.js';
import type { Faults } from './faults.js';
import { usedMemory } from './faults.js';
import { sendOnce } from './http.js';
import type { BookingModel, Ledger } from './ledger.js';
import type { Firms, Workload, WorkloadTiming } from './workload.js';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Row {
  name: string;
  expected: string;
  actual: string;
  ok: boolean;
}

export interface CheckContext {
  cluster: Cluster;
  ledger: Ledger;
  firms: Firms;
  timing: WorkloadTiming;
  faults: Faults;
  workload: Workload;
  /** How much Redis may hold at the end beyond its start (bounded job history, reminders). */
  redisGrowthBudget: number;
  say: (line: string) => void;
}

const GRACE_MS = 60_000;
const EFFECTS = ['lead', 'crm', 'email', 'team_chat'] as const;

/** Latest due time of a reminder that should be sent during the run (not cancelled). */
function lastDueDuringRun(ledger: Ledger, offsets: number[]): number {
  let last = 0;
  for (const model of ledger.bookings.values()) {
    if (model.createdAck === undefined) continue;
    for (const offset of offsets) {
      const due = model.startMs - offset * 60_000;
      if (due <= model.createdAck.ackAt || due > Date.now() + 3600_000) continue;
      if (model.cancelAck !== undefined && due > model.cancelAck) continue;
      last = Math.max(last, due);
    }
  }
  return last;
}

/**
 * Jobs still to run, by queue and state: everything waiting, active or prioritized, and delayed
 * jobs due within the next minute, or later but not reminders (a retry's backoff counts). Job
 * schedulers' next runs (ids "repeat:...") do not count.
 */
async function pendingJobs(cluster: Cluster): Promise<{ total: number; detail: string }> {
  let total = 0;
  const detail: string[] = [];
  const soon = (Date.now() + 60_000) * 0x1000; // BullMQ's delayed score: ms × 0x1000 + counter
  for (const name of QUEUE_NAMES) {
    const counts = await cluster.queues[name].getJobCounts(
      'waiting',
      'active',
      'prioritized',
      'waiting-children',
    );
    for (const [state, n] of Object.entries(counts)) {
      if (n === 0) continue;
      total += n;
      detail.push(`${name} ${state} ${n}`);
    }
    const delayedKey = `${cluster.queuePrefix}:${name}:delayed`;
    const ids =
      name === QUEUE.bookings
        ? await cluster.redis.zrangebyscore(delayedKey, 0, String(soon))
        : await cluster.redis.zrange(delayedKey, '0', '-1');
    const delayed = ids.filter((id) => !id.startsWith('repeat:')).length;
    if (delayed > 0) {
      total += delayed;
      detail.push(`${name} delayed ${delayed}`);
    }
  }
  return { total, detail: detail.join(', ') };
}

/** Waits until the service has done all it acknowledged (or the deadline passes). */
export async function settle(ctx: CheckContext, deadlineMs: number): Promise<boolean> {
  const { cluster, ledger, timing, workload, say } = ctx;
  const until = Date.now() + deadlineMs;
  let quietPolls = 0;
  let lastSay = 0;
  await workload.copiesSettled();
  for (;;) {
    let pending = -1;
    let detail = '';
    let campaignDone = false;
    try {
      ({ total: pending, detail } = await pendingJobs(cluster));
      const campaign = ledger.campaign
        ? await cluster.db.collection(COLLECTIONS.campaigns).findOne({ _id: ledger.campaign.id as never })
        : null;
      campaignDone =
        ledger.campaign === undefined || ['completed', 'cancelled'].includes(String(campaign?.status));
    } catch {
      pending = -1;
    }
    const remindersDue = lastDueDuringRun(ledger, timing.reminderOffsets) + 15_000 - Date.now();
    const quiet = pending === 0 && campaignDone && remindersDue <= 0;
    quietPolls = quiet ? quietPolls + 1 : 0;
    if (quietPolls >= 2) {
      await workload.copiesSettled();
      if ((await pendingJobs(cluster)).total === 0) return true;
      quietPolls = 0;
    }
    if (Date.now() > until) return false;
    if (Date.now() - lastSay > 15_000) {
      lastSay = Date.now();
      say(
        `settling: ${pending} jobs pending${detail ? ` (${detail})` : ''}, campaign ${campaignDone ? 'done' : 'running'}` +
          (remindersDue > 0 ? `, reminders due for ${Math.ceil(remindersDue / 1000)} s more` : ''),
      );
    }
    await sleep(3000);
  }
}

const row = (name: string, expected: string | number, actual: string | number, ok: boolean): Row => ({
  name,
  expected: String(expected),
  actual: String(actual),
  ok,
});

/** "n" when every item passed, else the failures first (a few of them named). */
function summary(total: number, bad: string[]): string {
  if (bad.length === 0) return String(total);
  return `${total - bad.length}/${total}; ✗ ${bad.slice(0, 3).join(', ')}${bad.length > 3 ? ', …' : ''}`;
}

interface CallRow {
  _id: string;
  firm: string;
  status: string;
  to_number: string | null;
  campaign_id?: string;
  campaign_attempt?: number;
  effects?: Partial<Record<(typeof EFFECTS)[number], { state: string }>>;
  extraction?: { email: string | null; phone: string | null };
}

export async function checkInvariants(ctx: CheckContext): Promise<Row[]> {
  const { cluster, ledger, firms } = ctx;
  const db = cluster.db;
  const rows: Row[] = [];
  const callFirms = [firms.campaign.slug, firms.direct.slug];
  const calls = (await db
    .collection(COLLECTIONS.calls)
    .find(
      { firm: { $in: callFirms } },
      {
        projection: {
          firm: 1,
          status: 1,
          to_number: 1,
          campaign_id: 1,
          campaign_attempt: 1,
          effects: 1,
          extraction: 1,
        },
      },
    )
    .toArray()) as unknown as CallRow[];
  const callById = new Map(calls.map((c) => [c._id, c]));
  const dials = (await db
    .collection(COLLECTIONS.simulatorCalls)
    .find({}, { projection: { to_number: 1, 'metadata.call_id': 1 } })
    .toArray()) as unknown as Array<{ to_number: string; metadata: { call_id: string } }>;
  const dialsByCall = new Map<string, number>();
  for (const d of dials) dialsByCall.set(d.metadata.call_id, (dialsByCall.get(d.metadata.call_id) ?? 0) + 1);

  // ------------------------------------------------------------ the campaign
  const campaign = ledger.campaign;
  if (campaign !== undefined) {
    const expectedQueued = campaign.phones.size;
    rows.push(
      row(
        'campaign launch: 200, calls_queued = distinct callable leads',
        `200, ${expectedQueued}`,
        `${campaign.launchStatus}, ${campaign.callsQueued}`,
        campaign.launchStatus === 200 && campaign.callsQueued === expectedQueued,
      ),
    );
    const campaignCalls = calls.filter((c) => c.campaign_id === campaign.id);
    const byPhone = new Map<string, CallRow[]>();
    for (const c of campaignCalls)
      byPhone.set(c.to_number ?? '', [...(byPhone.get(c.to_number ?? '') ?? []), c]);
    let expectedRecords = 0;
    const wrongCount: string[] = [];
    const wrongOutcome: string[] = [];
    const wrongDials: string[] = [];
    let dialled = 0;
    for (const [phone, kind] of campaign.phones) {
      const want = kind === 'no_answer' ? 3 : 1;
      expectedRecords += want;
      const got = byPhone.get(phone) ?? [];
      if (got.length !== want || new Set(got.map((c) => c.campaign_attempt)).size !== got.length) {
        wrongCount.push(`${phone}: ${got.length} calls`);
      }
      const status = kind === 'answered' ? 'ended' : kind === 'no_answer' ? 'not_connected' : 'error';
      if (got.some((c) => c.status !== status))
        wrongOutcome.push(`${phone}: ${got.map((c) => c.status).join('/')}`);
      for (const c of got) {
        const n = dialsByCall.get(c._id) ?? 0;
        dialled += n;
        if (n !== (kind === 'error' ? 0 : 1)) wrongDials.push(`${c._id}: ${n} dials`);
      }
    }
    const expectedDials = expectedRecords - [...campaign.phones.values()].filter((k) => k === 'error').length;
    rows.push(
      row(
        'campaign: every lead called exactly once (+2 retries if not_connected)',
        `${expectedRecords} call records over ${campaign.phones.size} leads`,
        summary(campaignCalls.length, wrongCount),
        wrongCount.length === 0 && campaignCalls.length === expectedRecords,
      ),
    );
    rows.push(
      row(
        'campaign: provider dials = call records (9999: refused, no dial)',
        expectedDials,
        wrongDials.length === 0 ? dialled : `${dialled}; ✗ ${wrongDials.slice(0, 3).join(', ')}`,
        wrongDials.length === 0 && dialled === expectedDials,
      ),
    );
    rows.push(
      row(
        'campaign: each call ended as its number says (answered / 0000 / 9999)',
        campaignCalls.length,
        summary(campaignCalls.length, wrongOutcome),
        wrongOutcome.length === 0,
      ),
    );
    const view = await sendOnce(undefined, cluster.webUrl, 'GET', `/api/leads/campaigns/${campaign.id}`, {
      route: 'GET campaign',
      token: firms.campaign.key,
    });
    const answered = [...campaign.phones.values()].filter((k) => k === 'answered').length;
    const counts = view.body as {
      status: string;
      calls_queued: number;
      calls_completed: number;
      calls_failed: number;
    } | null;
    rows.push(
      row(
        'campaign: completed; calls_completed + calls_failed = calls_queued',
        `completed, ${answered} + ${expectedQueued - answered} = ${expectedQueued}`,
        `${counts?.status}, ${counts?.calls_completed} + ${counts?.calls_failed} = ${counts?.calls_queued}`,
        counts?.status === 'completed' &&
          counts.calls_completed === answered &&
          counts.calls_failed === expectedQueued - answered &&
          counts.calls_queued === expectedQueued,
      ),
    );
  }

  // ------------------------------------------------------------ direct calls (and probes)
  const direct = ledger.directCalls;
  const okDirect = direct.filter((d) => d.status === 200);
  const directBad: string[] = [];
  for (const d of okDirect) {
    const ids = new Set(d.okCallIds);
    const call = callById.get(d.callId!);
    const kind = d.toNumber.endsWith('0000')
      ? 'not_connected'
      : d.toNumber.endsWith('9999')
        ? 'error'
        : 'ended';
    if (ids.size !== 1) directBad.push(`${d.idempotencyKey}: ${ids.size} call ids`);
    else if (call === undefined) directBad.push(`${d.callId}: missing`);
    else if (call.status !== kind) directBad.push(`${d.callId}: ${call.status}`);
    else if ((dialsByCall.get(call._id) ?? 0) !== (kind === 'error' ? 0 : 1))
      directBad.push(`${d.callId}: ${dialsByCall.get(call._id) ?? 0} dials`);
  }
  rows.push(
    row(
      'create-outbound-call: every 200 has its call, dialled once, finished',
      `${okDirect.length} (${okDirect.filter((d) => d.kind === 'probe').length} probes)`,
      summary(okDirect.length, directBad),
      directBad.length === 0,
    ),
  );
  const directStored = calls.filter((c) => c.firm === firms.direct.slug).length;
  rows.push(
    row(
      'create-outbound-call: no call stored for a refused request',
      `${okDirect.length} calls (${direct.length - okDirect.length} refused)`,
      directStored,
      directStored === okDirect.length,
    ),
  );
  const unanswered = direct.filter((d) => d.kind === 'workload' && d.status !== 200);
  rows.push(
    row(
      'create-outbound-call: every workload call accepted in the end',
      direct.filter((d) => d.kind === 'workload').length,
      summary(
        direct.filter((d) => d.kind === 'workload').length,
        unanswered.map((d) => `${d.idempotencyKey}: ${d.status}`),
      ),
      unanswered.length === 0,
    ),
  );

  // ------------------------------------------------------------ call_analyzed effects
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
   * once, never lost: README "Claims, record locks and effects"). A repeat is accepted only when
   * a worker ended abruptly within 5 s after the first send and before the repeat; any other
   * repeat is a bug.
   */
  const perSend = (name: string, times: (c: CallRow) => number[]) => {
    const bad: string[] = [];
    let repeats = 0;
    for (const c of analysed) {
      const t = times(c).sort((a, b) => a - b);
      if (t.length === 0) bad.push(`${c._id}: none`);
      for (let i = 1; i < t.length; i++) {
        const explained = ledger.abruptEnds.some(
          (k) => k >= t[i - 1]! - 1000 && k <= t[i - 1]! + 5000 && k < t[i]!,
        );
        if (explained) repeats++;
        else
          bad.push(
            `${c._id}: repeated ${((t[i]! - t[i - 1]!) / 1000).toFixed(1)} s later, no worker died between`,
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

  // ------------------------------------------------------------ bookings and reminders
  rows.push(...(await bookingRows(ctx)));

  // ------------------------------------------------------------ the import
  for (const imp of ledger.imports) {
    rows.push(
      row(
        'contacts import: answered 200; imported / duplicates / errors',
        `200; ${imp.expected.imported} / ${imp.expected.duplicates} / ${imp.expected.errors}`,
        `${imp.status}; ${imp.result?.imported} / ${imp.result?.duplicates} / ${imp.result?.errors}`,
        imp.status === 200 &&
          imp.result?.imported === imp.expected.imported &&
          imp.result.duplicates === imp.expected.duplicates &&
          imp.result.errors === imp.expected.errors,
      ),
    );
    const contacts = (await db
      .collection(COLLECTIONS.contacts)
      .find({ firm: firms.imports.slug }, { projection: { phone: 1, email: 1 } })
      .toArray()) as unknown as Array<{ phone?: string; email?: string }>;
    const phones = countBy(contacts.map((c) => c.phone ?? ''));
    const emails = countBy(contacts.map((c) => c.email ?? ''));
    const bad = imp.phones
      .map((p, i) => [p, imp.emails[i]!] as const)
      .filter(([p, e]) => phones.get(p) !== 1 || emails.get(e) !== 1)
      .map(([p, e]) => `${p}/${e}: ${phones.get(p) ?? 0}/${emails.get(e) ?? 0}`);
    rows.push(
      row(
        'contacts import: every imported contact present once, nothing else',
        `${imp.phones.length} contacts`,
        summary(contacts.length, bad),
        bad.length === 0 && contacts.length === imp.phones.length,
      ),
    );
  }

  // ------------------------------------------------------------ jobs
  // A number ending 9999 is refused by the provider for good: its place-call job fails by design
  // (UnrecoverableError, the call ends `error`). Every other failed job is a job lost to a fault.
  const refusals = calls.filter((c) => c.to_number?.endsWith('9999')).length;
  const lost: string[] = [];
  let refused = 0;
  for (const name of QUEUE_NAMES) {
    if ((await cluster.queues[name].getFailedCount()) === 0) continue;
    for (const job of await cluster.queues[name].getFailed(0, -1)) {
      const call = callById.get(String(job.id));
      if (name === QUEUE.calls && call?.to_number?.endsWith('9999') && call.status === 'error') refused++;
      else lost.push(`${name}/${job.name} ${job.id}: ${(job.failedReason ?? '').slice(0, 80)}`);
    }
  }
  rows.push(
    row(
      'no job failed for good (the provider refusing ...9999 numbers aside)',
      `0 (+ ${refusals} refusals)`,
      lost.length === 0 ? `0 (+ ${refused} refusals)` : `${lost.length}; ${lost.slice(0, 3).join('; ')}`,
      lost.length === 0 && refused === refusals,
    ),
  );
  const pending = await pendingJobs(cluster);
  rows.push(
    row(
      'every queue drained (future reminders aside)',
      0,
      pending.total === 0 ? 0 : `${pending.total} (${pending.detail})`,
      pending.total === 0,
    ),
  );

  // ------------------------------------------------------------ answers during outages
  rows.push(...answerRows(ctx));

  // ------------------------------------------------------------ faults as run
  rows.push(...faultRows(ctx));

  // ------------------------------------------------------------ Redis
  const keys = redisKeys(cluster.queuePrefix);
  const locks = await scanCount(cluster, keys.anyLock());
  let slots = 0;
  let waiting = 0;
  for (const firm of callFirms) {
    slots += await cluster.redis.zcard(keys.dialSlots(firm));
    waiting += await cluster.redis.zcard(keys.dialWaiters(firm));
    waiting += await cluster.redis.zcard(keys.dialWaking(firm));
  }
  rows.push(
    row(
      'no record lock, dial slot or dial waiter left over',
      '0 locks, 0 slots, 0 waiters',
      `${locks} locks, ${slots} slots, ${waiting} waiters`,
      locks === 0 && slots === 0 && waiting === 0,
    ),
  );
  const end = await usedMemory(cluster);
  ledger.redisMemory.end = end ?? undefined;
  const start = ledger.redisMemory.start ?? 0;
  const mib = (n: number) => `${(n / 1048576).toFixed(1)} MiB`;
  rows.push(
    row(
      'Redis memory back near its start',
      `≤ start + ${mib(ctx.redisGrowthBudget)}`,
      `${mib(start)} → peak ${mib(ledger.redisMemory.peak)} → ${mib(end ?? -1)}`,
      end !== null && end - start <= ctx.redisGrowthBudget,
    ),
  );
  return rows;
}

function timesBy(entries: Array<[string, number]>): Map<string, number[]> {
  const times = new Map<string, number[]>();
  for (const [k, at] of entries) times.set(k, [...(times.get(k) ?? []), at]);
  return times;
}

function countBy(keys: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const k of keys) counts.set(k, (counts.get(k) ?? 0) + 1);
  return counts;
}

async function scanCount(cluster: Cluster, pattern: string): Promise<number> {
  let cursor = '0';
  let n = 0;
  do {
    const [next, keys] = await cluster.redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    n += keys.length;
  } while (cursor !== '0');
  return n;
}

/** The reminders a booking should hold, by field, from what the run sent and had acknowledged. */
function expectedReminders(
  model: BookingModel,
  offsets: number[],
  firmEmail: string,
): Array<{ offset: number; to: string; due: number; certain: boolean }> {
  const out: Array<{ offset: number; to: string; due: number; certain: boolean }> = [];
  const ack = model.createdAck!;
  for (const offset of offsets) {
    const due = model.startMs - offset * 60_000;
    if (due <= ack.sentAt) continue; // already past when it was sent: skipped
    // Past by the time it was acknowledged (the web's clock lies between): either way.
    const certain = due > ack.ackAt;
    for (const to of [model.attendee, firmEmail]) out.push({ offset, to, due, certain });
  }
  return out;
}

async function bookingRows(ctx: CheckContext): Promise<Row[]> {
  const { cluster, ledger, firms, timing } = ctx;
  const rows: Row[] = [];
  const firm = firms.bookings.slug;
  const mails = timesBy(cluster.smtp.messages.map((m) => [m.header('message-id') ?? '', m.at]));
  const mailFrom = cluster.env.MAIL_FROM!;
  const now = Date.now();
  const acked = ledger.bookingEvents.filter((e) => e.status === 200);
  const workloadEvents = ledger.bookingEvents.filter((e) => !e.uid.startsWith('bk-probe-'));
  const notAcked = workloadEvents.filter((e) => e.status !== 200);
  rows.push(
    row(
      'booking events: every workload event acknowledged',
      workloadEvents.length,
      summary(
        workloadEvents.length,
        notAcked.map((e) => `${e.trigger} ${e.uid}: ${e.status}`),
      ),
      notAcked.length === 0,
    ),
  );
  const setBad: string[] = [];
  const stateBad: string[] = [];
  const cancelledSent: string[] = [];
  const sentTwice: string[] = [];
  let repeatedSends = 0;
  let reminders = 0;
  let sent = 0;
  let cancelled = 0;
  for (const model of ledger.bookings.values()) {
    if (model.createdAck === undefined) continue;
    const hash = await cluster.redis.hgetall(
      redisKeys(cluster.queuePrefix).bookingReminders(firm, model.uid),
    );
    const stored = new Map<string, ReminderRecord>();
    for (const [field, value] of Object.entries(hash)) {
      if (field.startsWith('r|')) stored.set(field, JSON.parse(value) as ReminderRecord);
    }
    const expected = expectedReminders(model, timing.reminderOffsets, firms.bookings.notificationEmail);
    const fieldOf = (e: { offset: number; to: string }) => `r|${model.startMs}|${e.offset}|${e.to}`;
    const mustHave = expected.filter((e) => e.certain).map(fieldOf);
    const mayHave = new Set(expected.map(fieldOf));
    // A cancel (or reschedule away) applied before the creation leaves a tombstone and stores
    // nothing ("the cancel always wins"): a cancelled booking may hold fewer reminders.
    const missing = model.cancelAck === undefined ? mustHave.filter((f) => !stored.has(f)) : [];
    const extra = [...stored.keys()].filter((f) => !mayHave.has(f));
    if (missing.length > 0 || extra.length > 0) {
      setBad.push(`${model.uid}: ${missing.length} missing, ${extra.length} extra`);
    }
    for (const [field, r] of stored) {
      reminders++;
      const times = (mails.get(reminderMessageId(mailFrom, firm, model.uid, field)) ?? []).sort(
        (a, b) => a - b,
      );
      const mailed = times.length;
      // A repeat only when a worker died between SMTP's acceptance and the `sent` record (README).
      const repeatsExplained = times
        .slice(1)
        .every((t, i) =>
          ledger.abruptEnds.some((k) => k >= times[i]! - 1000 && k <= times[i]! + 5000 && k < t),
        );
      if (r.status === 'sent') sent++;
      if (r.status === 'cancelled') cancelled++;
      if (r.status === 'cancelled' && mailed > 0) cancelledSent.push(`${model.uid} ${r.to}`);
      if (r.status === 'sent' && (mailed === 0 || !repeatsExplained))
        sentTwice.push(`${model.uid} ${r.to}: ${mailed} mails`);
      if (r.status === 'sent' && mailed > 1 && repeatsExplained) repeatedSends++;
      if (r.status !== 'sent' && r.status !== 'cancelled' && mailed > 0)
        cancelledSent.push(`${model.uid} ${r.to}: ${r.status} but mailed`);
      let want: string[];
      if (model.cancelAck !== undefined) {
        want = r.due_at > model.cancelAck + GRACE_MS ? ['cancelled'] : ['cancelled', 'sent'];
      } else {
        want =
          r.due_at < now - GRACE_MS
            ? ['sent']
            : r.due_at > now
              ? ['scheduled']
              : ['scheduled', 'sending', 'sent'];
      }
      if (!want.includes(r.status)) {
        stateBad.push(
          `${model.uid} ${r.to}: ${r.status}, want ${want.join('|')}${model.cancelledBy ? ` (${model.cancelledBy})` : ''}`,
        );
      }
    }
  }
  const bookings = [...ledger.bookings.values()].filter((m) => m.createdAck !== undefined).length;
  rows.push(
    row(
      'every acknowledged booking has exactly its reminders',
      `${bookings} bookings (${acked.length} events)`,
      summary(bookings, setBad),
      setBad.length === 0,
    ),
  );
  rows.push(
    row(
      'reminder states: due → sent, later → scheduled, cancelled stays cancelled',
      `${reminders} reminders`,
      stateBad.length === 0
        ? `${sent} sent, ${cancelled} cancelled, ${reminders - sent - cancelled} other`
        : summary(reminders, stateBad),
      stateBad.length === 0,
    ),
  );
  rows.push(
    row(
      'no cancelled reminder sent',
      0,
      cancelledSent.length === 0 ? 0 : summary(cancelledSent.length, cancelledSent),
      cancelledSent.length === 0,
    ),
  );
  rows.push(
    row(
      'every sent reminder mailed exactly once (a repeat only after a SIGKILL)',
      `${sent} × 1`,
      sentTwice.length === 0
        ? `${sent}${repeatedSends > 0 ? ` + ${repeatedSends} repeated after a SIGKILL` : ''}`
        : summary(sent, sentTwice),
      sentTwice.length === 0,
    ),
  );
  return rows;
}

function answerRows(ctx: CheckContext): Row[] {
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
    rows.push(
      row(
        `${fault} down: work answered 503 + Retry-After, or 200 only when stored`,
        `${work.length} probes`,
        [...counts.entries()].map(([k, v]) => `${k}: ${v}`).join(', ') || '-',
        odd.length === 0 &&
          oddRetry.length === 0 &&
          (fault !== 'redis' || work.every((p) => p.status === 503)),
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

function faultRows(ctx: CheckContext): Row[] {
  const { ledger, faults } = ctx;
  const rows: Row[] = [];
  const kills = ledger.faults.filter((f) => f.kind === 'SIGKILL worker');
  rows.push(
    row(
      'faults: workers SIGKILLed and started again',
      faults.plan.workerKills,
      `${kills.length} (jobs active at each: ${ledger.kills.map((k) => k.activeAtKill).join(', ') || '-'})`,
      kills.length === faults.plan.workerKills && kills.every((k) => k.ok),
    ),
  );
  for (const t of ledger.sigterms) {
    rows.push(
      row(
        'fault: SIGTERM at a busy moment: exit 0 within 25 s',
        'exit 0, < 25 s',
        `exit ${t.exitCode}, ${(t.afterMs / 1000).toFixed(1)} s (${t.activeAtSignal} jobs active, ${t.handedBack} handed back)`,
        t.exitCode === 0 && t.afterMs < 25_000,
      ),
    );
  }
  for (const f of ledger.faults.filter((x) => x.kind.includes('stop/start'))) {
    rows.push(
      row(`fault: ${f.kind}`, 'ready again', `${(f.durationMs / 1000).toFixed(1)} s down; ${f.detail}`, f.ok),
    );
  }
  const slack = ledger.faults.find((f) => f.kind.startsWith('slack'));
  if (slack !== undefined)
    rows.push(
      row(
        'fault: Slack failing 50 % for a while',
        '> 0 failed',
        `${faults.slackFailed} failed`,
        faults.slackFailed > 0,
      ),
    );
  if (faults.plan.clio429)
    rows.push(
      row('fault: Clio answering 429 now and then', '> 0', `${faults.clio429s} × 429`, faults.clio429s > 0),
    );
  return rows;
}
