// The fixed workload of a chaos run, sent through the public API as clients and providers send
// it: one campaign over N leads, direct calls (create-outbound-call with Idempotency-Key),
// one contacts import, and Cal.com booking stories (created, rescheduled, cancelled), spread
// over the first minutes of the run. Every call_analyzed the simulator delivers is delivered
// a second time by the run itself, signed as the provider signs it.
import { randomBytes } from 'node:crypto';
import { signCalWebhook } from '../../core/integrations/booking/cal-signature.js';
import {
  signRetellWebhook,
  RETELL_SIGNATURE_HEADER,
} from '../../core/integrations/voice/webhook-signature.js';
import { FLOOD_CALCOM, type Cluster } from './cluster.js';
import { defaultRetry, send, type JsonObject } from './http.js';
import type { BookingEventRecord, BookingModel, BookingTrigger, Ledger } from './ledger.js';
import type { Rng } from './rng.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** The consent each campaign lead carries (docs/compliance.md#consent). */
const WRITTEN_CONSENT = {
  kind: 'written',
  text: 'Agreed to calls about their case (web form).',
  obtained_at: '2026-01-01T00:00:00Z',
  source: 'web_form',
};

export interface WorkloadSizes {
  campaignLeads: number;
  directCalls: number;
  importRows: number;
  bookingEvents: number;
  /** Availability requests of the flood firm, each a 14-day query Cal.com answers with about 1 MiB. */
  availabilityRequests?: number;
}

export interface WorkloadTiming {
  /** Direct calls and booking stories start within this long after the workload begins. */
  spreadMs: number;
  /** A "soon" booking starts this long after its creation (min, max): its last reminder is due during the run. */
  soonStartMs: [number, number];
  /** Reminder offsets of the bookings firm (minutes). */
  reminderOffsets: number[];
  /**
   * How long past its due time a reminder may still be on its way: the settle waits this long
   * after the last one due, and the check then wants every reminder due before that `sent`.
   */
  reminderGraceMs: number;
  /** The delay of a booking's next event after the previous one was acknowledged (min, max). */
  nextEventMs: [number, number];
  /** The second copy of a call_analyzed goes this long after the first was acknowledged (max). */
  copyDelayMaxMs: number;
  /** The campaign is launched this long after the workload begins (min, max). */
  launchAtMs: [number, number];
  /** The import is sent this long after the workload begins (min, max). */
  importAtMs: [number, number];
}

export interface Firm {
  slug: string;
  key: string;
  voiceSecret: string;
  bookingSecret: string;
  agentId?: string;
  notificationEmail: string;
  slackUrl?: string;
  /** Its endpoint subscribed to every event (`*`) at cluster.events, and the endpoint's signing secret. */
  events?: { path: string; secret: string };
}

export interface Firms {
  campaign: Firm;
  direct: Firm;
  bookings: Firm;
  imports: Firm;
  /** Its Cal.com (cluster.calcom) answers a slot every minute: the availability flood's firm. */
  flood: Firm;
}

interface ImportSummary {
  imported: number;
  duplicates: number;
  errors: number;
}

/** The status of an answer and its Retry-After header. */
export interface Answered {
  status: number;
  retryAfter: string | null;
}

const hex = (n: number) => randomBytes(n).toString('hex');

const INTAKE_QUESTIONS = [
  { key: 'full_name', question: 'May I have your full name?' },
  { key: 'phone', question: 'What number can we reach you on?' },
  { key: 'email', question: 'What is your email address?' },
  { key: 'case_type', question: 'What kind of matter is this?' },
];

/** Four letters for i (a unique, fixed-length surname stem: no name is a prefix of another). */
export function letters(i: number): string {
  let out = '';
  let n = i;
  for (let k = 0; k < 4; k++) {
    out = String.fromCharCode(97 + (n % 26)) + out;
    n = Math.floor(n / 26);
  }
  return out[0]!.toUpperCase() + out.slice(1);
}

/**
 * The i-th distinct valid number of an area code: ...0000 for an unanswered one, ...9999 for one
 * the provider refuses (the simulator's rules), else 1000–8999 — but ...3333, whose simulated
 * caller asks not to be called again (an opt-out: no intake), is ...0333 instead.
 */
export function phoneOf(area: string, i: number, outcome: 'answered' | 'no_answer' | 'error'): string {
  const exchange = 200 + Math.floor(i / 8000);
  const answered = String(1000 + (i % 8000));
  const line =
    outcome === 'no_answer' ? '0000' : outcome === 'error' ? '9999' : answered === '3333' ? '0333' : answered;
  return `+1${area}${exchange}${line}`;
}

async function must(reply: { status: number; body: JsonObject }, what: string): Promise<JsonObject> {
  if (reply.status !== 200) throw new Error(`${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return reply.body;
}

export async function createFirms(
  cluster: Cluster,
  ledger: Ledger,
  timing: WorkloadTiming,
  /** Each firm subscribes an endpoint to every event (the events-out invariant checks it). */
  eventsOut = true,
): Promise<Firms> {
  const admin = cluster.adminKey;
  const make = async (role: string, settings: Record<string, unknown>, withAgent: boolean): Promise<Firm> => {
    const slug = `chaos-${role}-${hex(3)}`;
    const voiceSecret = `whsec_${hex(16)}`;
    const bookingSecret = `calsec_${hex(16)}`;
    const notificationEmail = `${role}-desk@firm.test`;
    const slackUrl = cluster.slack.webhookUrl();
    const crm = { provider: 'clio', access_token: cluster.clio.token, base_url: cluster.clio.url };
    await must(
      await send(ledger, cluster.webUrl, 'POST', '/api/firms', {
        route: 'POST firms',
        token: admin,
        body: {
          slug,
          name: `Chaos ${role}`,
          settings: {
            timezone: 'America/New_York',
            voice_webhook_secret: voiceSecret,
            booking_webhook_secret: bookingSecret,
            notification_emails: [notificationEmail],
            slack_webhook_url: slackUrl,
            crm,
            ...settings,
          },
        },
      }),
      `create firm ${slug}`,
    );
    const key = (
      await must(
        await send(ledger, cluster.webUrl, 'POST', '/api/auth/api-keys', {
          route: 'POST api-keys',
          token: admin,
          body: { firmSlug: slug, name: 'chaos' },
        }),
        'create api key',
      )
    ).key as string;
    const firm: Firm = { slug, key, voiceSecret, bookingSecret, notificationEmail, slackUrl };
    const eventsPath = `/${slug}`;
    if (eventsOut) {
      const endpoint = await must(
        await send(ledger, cluster.webUrl, 'POST', '/api/webhook-endpoints', {
          route: 'POST webhook-endpoints',
          token: key,
          body: { firmSlug: slug, url: cluster.events.url(eventsPath), events: ['*'] },
        }),
        'create webhook endpoint',
      );
      firm.events = { path: eventsPath, secret: endpoint.secret as string };
    }
    if (withAgent) {
      firm.agentId = (
        await must(
          await send(ledger, cluster.webUrl, 'POST', '/api/v2/create-agent', {
            route: 'POST create-agent',
            token: key,
            body: {
              firmSlug: slug,
              agent_name: `Intake ${role}`,
              voice_id: 'sim-en-us-ava',
              begin_message: 'Hi, this is the intake line.',
              intake_questions: INTAKE_QUESTIONS,
            },
          }),
          'create agent',
        )
      ).agent_id as string;
    }
    return firm;
  };
  const [campaign, direct, bookings, imports, flood] = await Promise.all([
    make('campaign', { max_concurrent_calls: 40 }, true),
    make('direct', { max_concurrent_calls: 20 }, true),
    make('bookings', { reminder_offsets_minutes: timing.reminderOffsets }, false),
    make('imports', {}, false),
    make(
      'flood',
      {
        booking: {
          provider: 'calcom',
          api_key: FLOOD_CALCOM.apiKey,
          event_type_id: FLOOD_CALCOM.eventTypeId,
          base_url: cluster.calcom.url,
        },
      },
      false,
    ),
  ]);
  return { campaign, direct, bookings, imports, flood };
}

/** Which numbers of a batch go unanswered or fail at the provider: about 2 % and 0.5 %. */
function outcomes(rng: Rng, count: number): Array<'answered' | 'no_answer' | 'error'> {
  return Array.from({ length: count }, () => {
    const x = rng.next();
    return x < 0.02 ? 'no_answer' : x < 0.025 ? 'error' : 'answered';
  });
}

export class Workload {
  /** Second copies of call_analyzed still being delivered. */
  private readonly copying = new Set<Promise<void>>();
  private readonly copied = new Set<string>();
  private probeCount = 0;
  private started = 0;
  private markCampaignCreated: () => void = () => {};
  /**
   * Settles once the campaign and its leads are created (or their creation failed). Creating a
   * campaign is not idempotent (the route takes no Idempotency-Key), so it is sent once and never
   * retried: the faults wait for it (faults.ts), as a client would not create one mid-outage twice.
   */
  readonly campaignCreated = new Promise<void>((resolve) => (this.markCampaignCreated = resolve));

  constructor(
    private readonly cluster: Cluster,
    private readonly ledger: Ledger,
    private readonly firms: Firms,
    private readonly sizes: WorkloadSizes,
    private readonly timing: WorkloadTiming,
    private readonly rng: Rng,
  ) {
    const copyRng = rng.fork('copies');
    cluster.proxy.onDelivery.push((delivery, rawBody) => {
      if (delivery.event !== 'call_analyzed' || delivery.status !== 200) return;
      if (this.copied.has(delivery.providerCallId)) return;
      this.copied.add(delivery.providerCallId);
      const firm = Object.values(this.firms).find((f) => f.slug === delivery.firm);
      if (firm === undefined) return;
      const copy = this.deliverCopy(firm, delivery.callId, delivery.providerCallId, rawBody, copyRng);
      this.copying.add(copy);
      void copy.finally(() => this.copying.delete(copy));
    });
  }

  /** The second delivery of a call_analyzed: the same body, signed afresh, straight to the web process. */
  private async deliverCopy(
    firm: Firm,
    callId: string,
    providerCallId: string,
    rawBody: string,
    rng: Rng,
  ): Promise<void> {
    await sleep(rng.int(0, this.timing.copyDelayMaxMs));
    let reply;
    for (;;) {
      reply = await send(this.ledger, this.cluster.webUrl, 'POST', `/api/v2/${firm.slug}/webhook`, {
        route: 'POST call webhook (copy)',
        rawBody,
        headers: {
          'Content-Type': 'application/json',
          [RETELL_SIGNATURE_HEADER]: signRetellWebhook(rawBody, firm.voiceSecret),
        },
        // A retried copy is signed again: the signature's timestamp must stay fresh.
        retryForMs: 0,
      });
      if (reply.status === 200 || ![0, 429, 502, 503, 504].includes(reply.status)) break;
      await sleep(1000);
    }
    this.ledger.copies.push({
      callId,
      providerCallId,
      firm: firm.slug,
      status: reply.status,
      at: Date.now(),
    });
  }

  /** Waits for every second copy under way. */
  async copiesSettled(): Promise<void> {
    while (this.copying.size > 0) await Promise.allSettled([...this.copying]);
  }

  /** Sends the whole workload; resolves when every part has been acknowledged. */
  async run(): Promise<void> {
    this.started = Date.now();
    await Promise.all([
      this.campaign(),
      this.directCalls(),
      this.importContacts(),
      this.bookingStories(),
      this.availabilityFlood(),
    ]);
  }

  private at(ms: number): Promise<void> {
    return sleep(Math.max(0, this.started + ms - Date.now()));
  }

  // ---------------------------------------------------------------- campaign

  private async campaign(): Promise<void> {
    const rng = this.rng.fork('campaign');
    const firm = this.firms.campaign;
    const kinds = outcomes(rng, this.sizes.campaignLeads);
    const phones = new Map<string, 'answered' | 'no_answer' | 'error'>();
    const leads = kinds.map((kind, i) => {
      const phone = phoneOf('212', i, kind);
      phones.set(phone, kind);
      // Written consent: the marketing campaign's consent rule lets each one be called.
      return {
        first_name: 'Avery',
        last_name: `Camp${letters(i)}`,
        phone,
        case_type: 'personal injury',
        consent: WRITTEN_CONSENT,
      };
    });
    let campaignId: string;
    try {
      campaignId = await this.createCampaign(leads);
    } finally {
      this.markCampaignCreated();
    }
    this.ledger.campaign = { id: campaignId, firm: firm.slug, leads: leads.length, phones };
    await this.at(rng.int(...this.timing.launchAtMs));
    const launch = await send(
      this.ledger,
      this.cluster.webUrl,
      'POST',
      `/api/leads/campaigns/${campaignId}/launch`,
      {
        route: 'POST campaign launch',
        token: firm.key,
        body: {},
      },
    );
    this.ledger.campaign.launchStatus = launch.status;
    if (launch.status === 200) this.ledger.campaign.callsQueued = launch.body.calls_queued as number;
  }

  /** The campaign with its leads, in chunks of 5,000: each chunk sent once. */
  private async createCampaign(leads: object[]): Promise<string> {
    const firm = this.firms.campaign;
    let campaignId: string | undefined;
    for (let i = 0; i < leads.length; i += 5000) {
      const chunk = leads.slice(i, i + 5000);
      const reply =
        campaignId === undefined
          ? await send(this.ledger, this.cluster.webUrl, 'POST', '/api/leads/campaigns', {
              route: 'POST campaigns',
              token: firm.key,
              body: { firmSlug: firm.slug, name: 'Chaos campaign', agentId: firm.agentId, leads: chunk },
              retryOn: () => false,
            })
          : await send(this.ledger, this.cluster.webUrl, 'POST', `/api/leads/campaigns/${campaignId}/leads`, {
              route: 'POST campaign leads',
              token: firm.key,
              body: { leads: chunk },
              retryOn: () => false,
            });
      const body = await must(reply, 'create campaign');
      campaignId ??= body.id as string;
    }
    return campaignId!;
  }

  // ---------------------------------------------------------------- direct calls

  private async directCalls(): Promise<void> {
    const rng = this.rng.fork('direct');
    const kinds = outcomes(rng, this.sizes.directCalls);
    const offsets = kinds.map(() => rng.int(0, this.timing.spreadMs)).sort((a, b) => a - b);
    await Promise.all(
      kinds.map(async (kind, j) => {
        await this.at(offsets[j]!);
        await this.placeCall('workload', phoneOf('312', j, kind), `Blake Direct${letters(j)}`, `chaos-${j}`);
      }),
    );
  }

  /** One create-outbound-call with an Idempotency-Key, sent until it is answered for good. */
  async placeCall(
    kind: 'workload' | 'probe',
    toNumber: string,
    fullName: string,
    key: string,
    retry = true,
  ): Promise<Answered> {
    const firm = this.firms.direct;
    const record = {
      kind,
      idempotencyKey: `${key}-${hex(4)}`,
      toNumber,
      fullName,
      status: 0,
      okCallIds: [] as string[],
    } as import('./ledger.js').DirectCall;
    this.ledger.directCalls.push(record);
    const reply = await send(this.ledger, this.cluster.webUrl, 'POST', '/api/v2/create-outbound-call', {
      route: 'POST create-outbound-call',
      token: firm.key,
      headers: { 'Idempotency-Key': record.idempotencyKey },
      body: {
        toNumber,
        agentId: firm.agentId,
        firmSlug: firm.slug,
        dynamicVariables: { full_name: fullName, case_type: 'employment' },
      },
      ...(retry ? {} : { retryForMs: 0 }),
      // A key whose first request died in an outage is answered 409 idempotency_key_in_use with
      // Retry-After until it is judged abandoned: a client retries (docs/calls.md).
      retryOn: (status, body) =>
        defaultRetry(status) ||
        (status === 409 && (body.error as { code?: string } | undefined)?.code === 'idempotency_key_in_use'),
      timeoutMs: 15_000,
    });
    record.status = reply.status;
    if (reply.status === 200) {
      record.callId = reply.body.call_id as string;
      record.okCallIds.push(record.callId);
    }
    return { status: reply.status, retryAfter: reply.headers.get('retry-after') };
  }

  /** A probe call during an outage: sent once; a 200 must be honoured like any other. */
  probeCall(): Promise<Answered> {
    const p = this.probeCount++;
    return this.placeCall(
      'probe',
      phoneOf('415', p, 'answered'),
      `Casey Probe${letters(p)}`,
      `probe-${p}`,
      false,
    );
  }

  // ---------------------------------------------------------------- availability flood

  /**
   * One firm asks its own Cal.com (a slot every minute) for 14 days of availability, each time
   * another query: about 1 MiB an answer. Without the availability cache's bounds the 80 answers
   * filled Redis past the run's maxmemory and other firms' webhooks got 500.
   */
  private async availabilityFlood(): Promise<void> {
    const count = this.sizes.availabilityRequests ?? 0;
    if (count === 0) return;
    // After the campaign is launched; four at a time, as a burst (each answer was kept 30 s).
    await this.at(this.timing.launchAtMs[1] + 5_000);
    const firm = this.firms.flood;
    const zones = ['UTC', 'America/Chicago', 'Europe/Berlin', 'Asia/Tokyo'];
    const day = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);
    const statuses: number[] = [];
    let next = 0;
    const one = async (): Promise<void> => {
      for (let i = next++; i < count; i = next++) {
        const first = 2 + (i % 20);
        const query = new URLSearchParams({
          firmSlug: firm.slug,
          start: day(first),
          end: day(first + 13),
          timeZone: zones[Math.floor(i / 20) % zones.length]!,
        });
        const reply = await send(
          this.ledger,
          this.cluster.webUrl,
          'GET',
          `/api/appointments/availability?${query}`,
          {
            route: 'GET availability (flood)',
            token: firm.key,
            retryForMs: 0,
          },
        );
        statuses.push(reply.status);
      }
    };
    await Promise.all([one(), one(), one(), one()]);
    const key = this.cluster.keys.appointmentSlots(firm.slug);
    const cacheBytes = Number(await this.cluster.redis.memory('USAGE', key).catch(() => 0)) || 0;
    const cacheKeys = await this.cluster.redis.exists(key).catch(() => 0);
    this.ledger.availabilityFlood = { statuses, cacheKeys, cacheBytes };
  }

  // ---------------------------------------------------------------- contacts import

  private async importContacts(): Promise<void> {
    const rng = this.rng.fork('import');
    const firm = this.firms.imports;
    const rows: Array<Record<string, unknown>> = [];
    const phones: string[] = [];
    const emails: string[] = [];
    let duplicates = 0;
    let errors = 0;
    for (let i = 0; i < this.sizes.importRows; i++) {
      const x = rng.next();
      const email = `pat.import${letters(i).toLowerCase()}@contacts.test`;
      const phone = `+1646${200 + Math.floor(i / 8000)}${1000 + (i % 8000)}`;
      if (emails.length > 0 && x < 0.01) {
        // An error row: a phone that is not a number, beside a valid email.
        rows.push({ first_name: 'Pat', last_name: `Bad${letters(i)}`, phone: 'call me maybe', email });
        errors++;
        continue;
      }
      if (emails.length > 0 && x < 0.03) {
        // A duplicate: an earlier row's email with a number of its own (released, never stored).
        rows.push({ first_name: 'Pat', last_name: `Dup${letters(i)}`, phone, email: rng.pick(emails) });
        duplicates++;
        continue;
      }
      rows.push({ first_name: 'Pat', last_name: `Import${letters(i)}`, phone: phone.slice(2), email });
      phones.push(phone);
      emails.push(email);
    }
    const record = {
      rows: rows.length,
      expected: { imported: phones.length, duplicates, errors },
      phones,
      emails,
    } as import('./ledger.js').ImportRecord;
    this.ledger.imports.push(record);
    await this.at(rng.int(...this.timing.importAtMs));
    for (let i = 0; i < rows.length; i += 5000) {
      const batch = rows.slice(i, i + 5000);
      const result = await this.importBatch(firm, batch);
      record.status = result.status;
      if (result.summary === undefined) return;
      record.result = {
        imported: (record.result?.imported ?? 0) + result.summary.imported,
        duplicates: (record.result?.duplicates ?? 0) + result.summary.duplicates,
        errors: (record.result?.errors ?? 0) + result.summary.errors,
      };
    }
  }

  private async importBatch(
    firm: Firm,
    contacts: Array<Record<string, unknown>>,
  ): Promise<{ status: number; summary?: { imported: number; duplicates: number; errors: number } }> {
    for (let tries = 0; tries < 3; tries++) {
      const reply = await send(this.ledger, this.cluster.webUrl, 'POST', '/api/contacts/import', {
        route: 'POST contacts import',
        token: firm.key,
        body: { firmSlug: firm.slug, contacts },
        timeoutMs: 90_000,
      });
      if (reply.status === 200) return { status: 200, summary: reply.body as unknown as ImportSummary };
      if (reply.status !== 202) return { status: reply.status };
      const jobId = reply.body.job_id as string;
      for (;;) {
        await sleep(1000);
        const view = await send(this.ledger, this.cluster.webUrl, 'GET', `/api/contacts/import/${jobId}`, {
          route: 'GET contacts import',
          token: firm.key,
        });
        if (view.status === 200 && view.body.status === 'completed')
          return { status: 200, summary: view.body as unknown as ImportSummary };
        if (view.status === 200 && view.body.status === 'failed') break; // rolled back: send it again
        if (view.status !== 202) return { status: view.status };
      }
    }
    return { status: 503 };
  }

  // ---------------------------------------------------------------- bookings

  private async bookingStories(): Promise<void> {
    const rng = this.rng.fork('bookings');
    // Stories: created only; created → rescheduled; created → cancelled; created → rescheduled → cancelled.
    const stories: number[][] = [];
    let events = 0;
    while (events < this.sizes.bookingEvents) {
      const x = rng.next();
      const story = x < 0.4 ? [0] : x < 0.6 ? [0, 1] : x < 0.85 ? [0, 2] : [0, 1, 2];
      const left = this.sizes.bookingEvents - events;
      stories.push(story.slice(0, left));
      events += Math.min(story.length, left);
    }
    await Promise.all(
      stories.map(async (story, s) => {
        const storyRng = rng.fork(`story-${s}`);
        await this.at(storyRng.int(0, this.timing.spreadMs));
        const soon = storyRng.chance(0.6);
        // Whole seconds: Cal.com sends times without milliseconds.
        const startFor = () =>
          Math.floor(
            (soon
              ? Date.now() + storyRng.int(...this.timing.soonStartMs)
              : Date.now() + storyRng.int(2, 6) * 86_400_000) / 1000,
          ) * 1000;
        const attendee = `sam.booking${letters(s).toLowerCase()}@client.test`;
        let uid = `bk-${s}-${hex(4)}`;
        let startMs = startFor();
        for (const [step, kind] of story.entries()) {
          if (step > 0) await sleep(storyRng.int(...this.timing.nextEventMs));
          if (kind === 0) {
            await this.bookingEvent('BOOKING_CREATED', uid, startMs, attendee);
          } else if (kind === 1) {
            const previous = uid;
            uid = `bk-${s}-r-${hex(4)}`;
            startMs = startFor();
            await this.bookingEvent('BOOKING_RESCHEDULED', uid, startMs, attendee, previous);
          } else {
            await this.bookingEvent('BOOKING_CANCELLED', uid, startMs, attendee);
          }
        }
      }),
    );
  }

  /** One Cal.com delivery, signed, sent until acknowledged; the booking model follows the ack. */
  async bookingEvent(
    trigger: BookingTrigger,
    uid: string,
    startMs: number,
    attendee: string,
    rescheduleUid?: string,
    retry = true,
  ): Promise<Answered> {
    const firm = this.firms.bookings;
    const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const record: BookingEventRecord = {
      trigger,
      uid,
      ...(rescheduleUid === undefined ? {} : { rescheduleUid }),
      startMs,
      sentAt: Date.now(),
    };
    this.ledger.bookingEvents.push(record);
    const raw = JSON.stringify({
      triggerEvent: trigger,
      createdAt: new Date().toISOString(),
      payload: {
        type: '30min',
        title: 'Initial consultation',
        startTime: iso(startMs),
        endTime: iso(startMs + 30 * 60_000),
        organizer: { name: 'Alex Counsel', email: 'alex@lawfirm.test', timeZone: 'America/New_York' },
        attendees: [{ email: attendee, name: 'Sam Client', timeZone: 'Europe/London' }],
        uid,
        ...(rescheduleUid === undefined ? {} : { rescheduleUid }),
        status: trigger === 'BOOKING_CANCELLED' ? 'CANCELLED' : 'ACCEPTED',
      },
    });
    const reply = await send(
      this.ledger,
      this.cluster.webUrl,
      'POST',
      `/api/v2/${firm.slug}/booking-webhook`,
      {
        route: 'POST booking-webhook',
        rawBody: raw,
        headers: {
          'Content-Type': 'application/json',
          'X-Cal-Signature-256': signCalWebhook(raw, firm.bookingSecret),
        },
        ...(retry ? {} : { retryForMs: 0 }),
        timeoutMs: 15_000,
      },
    );
    record.status = reply.status;
    const answered = { status: reply.status, retryAfter: reply.headers.get('retry-after') };
    if (reply.status !== 200) return answered;
    const ackAt = Date.now();
    record.ackAt = ackAt;
    const models = this.ledger.bookings;
    if (trigger === 'BOOKING_CANCELLED') {
      const model = models.get(uid);
      if (model !== undefined && model.cancelAck === undefined) {
        model.cancelAck = ackAt;
        model.cancelledBy = 'BOOKING_CANCELLED';
      }
      return answered;
    }
    if (rescheduleUid !== undefined) {
      const old = models.get(rescheduleUid);
      if (old !== undefined && old.cancelAck === undefined) {
        old.cancelAck = ackAt;
        old.cancelledBy = 'BOOKING_RESCHEDULED';
      }
    }
    const model: BookingModel = { uid, startMs, attendee, createdAck: { sentAt: record.sentAt, ackAt } };
    models.set(uid, model);
    return answered;
  }

  /**
   * A probe Retell call during an outage, on the bookings firm (whose calls no other check reads):
   * call_started then call_ended, each sent once; a 200 must be applied like any other.
   */
  async probeRetell(): Promise<Answered> {
    const p = this.probeCount++;
    const firm = this.firms.bookings;
    const providerCallId = `call_probe_${p}_${hex(4)}`;
    const start = Date.now() - 60_000;
    const call = {
      call_type: 'phone_call',
      call_id: providerCallId,
      agent_id: 'agent_chaos_probe',
      direction: 'inbound',
      from_number: phoneOf('628', p, 'answered'),
      to_number: '+14155550100',
      start_timestamp: start,
    };
    const deliver = async (event: string, body: Record<string, unknown>) => {
      const rawBody = JSON.stringify({ event, call: body });
      return send(this.ledger, this.cluster.webUrl, 'POST', `/api/v2/${firm.slug}/webhook`, {
        route: 'POST call webhook (probe)',
        rawBody,
        headers: {
          'Content-Type': 'application/json',
          [RETELL_SIGNATURE_HEADER]: signRetellWebhook(rawBody, firm.voiceSecret),
        },
        retryForMs: 0,
        timeoutMs: 15_000,
      });
    };
    const started = await deliver('call_started', { ...call, call_status: 'ongoing' });
    const ended = await deliver('call_ended', {
      ...call,
      call_status: 'ended',
      end_timestamp: start + 45_000,
      duration_ms: 45_000,
      disconnection_reason: 'user_hangup',
      transcript: 'Agent: Hello.\nUser: Hi, I was in an accident.',
    });
    this.ledger.retellProbes.push({
      firm: firm.slug,
      providerCallId,
      started: started.status,
      ended: ended.status,
      at: Date.now(),
    });
    const worst = started.status === 200 ? ended : started;
    return { status: worst.status, retryAfter: worst.headers.get('retry-after') };
  }

  /** A probe booking during an outage: sent once; a 200 must store its reminders like any other. */
  probeBooking(): Promise<Answered> {
    const p = this.probeCount++;
    return this.bookingEvent(
      'BOOKING_CREATED',
      `bk-probe-${p}-${hex(4)}`,
      Math.floor(Date.now() / 1000 + 3 * 86_400) * 1000,
      `probe${p}@client.test`,
      undefined,
      false,
    );
  }
}
