// The soak's steady mixed load, as clients and providers send it: outbound calls (the simulator
// plays each and posts its webhooks; call_analyzed starts the effects: lead, Clio, mail, Slack),
// a campaign launched every few minutes, contact imports, Cal.com booking deliveries whose
// reminders fall due during the soak, and an abandoned Clio connect now and then (its state
// expires unused, as a user who closes the consent page leaves it).
import { createHmac, randomBytes } from 'node:crypto';
import { api, rand } from '../lib/stack.js';
import { say } from '../lib/measure.js';

export interface Tenant {
  slug: string;
  key: string;
  agentId: string;
  bookingSecret: string;
}

export interface LoadPlan {
  callsPerSecond: number;
  bookingsPerSecond: number;
  campaignEverySeconds: number;
  campaignLeads: number;
  importEverySeconds: number;
  importRows: number;
  clioConnectEverySeconds: number;
}

export interface LoadCounts {
  calls: number;
  campaigns: number;
  campaignLeads: number;
  imports: number;
  importRows: number;
  bookings: number;
  clioConnects: number;
  failures: number;
}

/** The n-th distinct US number of a kind (its own area code), never 0000 or 9999 (the simulator leaves those unanswered). */
const number = (area: string, n: number): string =>
  `+1${area}${200 + Math.floor(n / 9998)}${String((n % 9998) + 1).padStart(4, '0')}`;

export class MixedLoad {
  readonly counts: LoadCounts = {
    calls: 0,
    campaigns: 0,
    campaignLeads: 0,
    imports: 0,
    importRows: 0,
    bookings: 0,
    clioConnects: 0,
    failures: 0,
  };
  /** Campaign ids launched, to wait for their completion at the end. */
  readonly campaignIds: string[] = [];
  private timers: NodeJS.Timeout[] = [];
  private inFlight = new Set<Promise<unknown>>();
  private firstError: string | undefined;
  private readonly run = rand(2);

  constructor(
    private readonly base: string,
    private readonly adminKey: string,
    private readonly direct: Tenant,
    private readonly campaignFirm: Tenant,
    private readonly plan: LoadPlan,
  ) {}

  start(): void {
    // Rates below one per tick are carried over: the load is steady, not bursty, at any rate.
    const every = (perSecond: number, op: () => Promise<unknown>) => {
      if (perSecond <= 0) return;
      let owed = 0;
      this.timers.push(
        setInterval(() => {
          owed += perSecond / 10;
          for (; owed >= 1; owed--) this.track(op());
        }, 100),
      );
    };
    const periodic = (seconds: number, op: () => Promise<unknown>) => {
      if (seconds <= 0) return;
      this.track(op());
      this.timers.push(setInterval(() => this.track(op()), seconds * 1000));
    };
    every(this.plan.callsPerSecond, () => this.call());
    every(this.plan.bookingsPerSecond, () => this.booking());
    periodic(this.plan.campaignEverySeconds, () => this.campaign());
    periodic(this.plan.importEverySeconds, () => this.import());
    periodic(this.plan.clioConnectEverySeconds, () => this.clioConnect());
  }

  /** Stops sending; resolves once every request sent has its answer. */
  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await Promise.allSettled([...this.inFlight]);
    if (this.firstError !== undefined)
      say(`soak load: ${this.counts.failures} failed; first: ${this.firstError}`);
  }

  private track(p: Promise<unknown>): void {
    const tracked = p.catch((err: unknown) => {
      this.counts.failures++;
      this.firstError ??= err instanceof Error ? err.message : String(err);
    });
    this.inFlight.add(tracked);
    void tracked.finally(() => this.inFlight.delete(tracked));
  }

  private async call(): Promise<void> {
    const n = this.counts.calls++;
    const res = await fetch(`${this.base}/api/v2/create-outbound-call`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${this.direct.key}`,
        'Content-Type': 'application/json',
        // Clients retry with one: every call leaves an idempotency record behind (kept 24 h).
        'Idempotency-Key': `soak-${this.run}-${n}`,
      },
      body: JSON.stringify({
        toNumber: number('312', n),
        agentId: this.direct.agentId,
        firmSlug: this.direct.slug,
        dynamicVariables: { first_name: `Soak ${n}`, case_type: 'soak test' },
      }),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`create-outbound-call: ${res.status}`);
  }

  private async campaign(): Promise<void> {
    const c = this.counts.campaigns++;
    const from = this.counts.campaignLeads;
    this.counts.campaignLeads += this.plan.campaignLeads;
    const leads = Array.from({ length: this.plan.campaignLeads }, (_, i) => ({
      phone: number('646', from + i),
      first_name: `Lead ${from + i}`,
    }));
    const t = this.campaignFirm;
    const { id } = await api<{ id: string }>(this.base, 'POST', '/api/leads/campaigns', t.key, {
      firmSlug: t.slug,
      name: `soak ${c}`,
      agentId: t.agentId,
      // Its leads carry no consent: an informational campaign calls them all on this stack
      // (INFORMATIONAL_CONSENT=false).
      purpose: 'informational',
      leads,
    });
    await api(this.base, 'POST', `/api/leads/campaigns/${id}/launch`, t.key);
    this.campaignIds.push(id);
  }

  private async import(): Promise<void> {
    const run = this.counts.imports++;
    const contacts = Array.from({ length: this.plan.importRows }, (_, i) => {
      const n = run * this.plan.importRows + i;
      return {
        first_name: `Import${i}`,
        last_name: `Run${run}`,
        phone: number('718', n),
        email: `import${n}.${this.run}@example.com`,
      };
    });
    await api(this.base, 'POST', '/api/contacts/import', this.adminKey, {
      firmSlug: this.direct.slug,
      contacts,
    });
    this.counts.importRows += contacts.length;
  }

  /** A Cal.com BOOKING_CREATED starting in 3–6 minutes: its reminders (2 and 1 min before) fall due in the soak. */
  private async booking(): Promise<void> {
    const i = this.counts.bookings++;
    const start = Date.now() + (3 + Math.random() * 3) * 60_000;
    const raw = JSON.stringify({
      triggerEvent: 'BOOKING_CREATED',
      createdAt: new Date().toISOString(),
      payload: {
        type: '30min',
        title: 'Initial consultation',
        description: 'Soak booking',
        startTime: new Date(start).toISOString(),
        endTime: new Date(start + 1800_000).toISOString(),
        organizer: { id: 1, name: 'Alex Counsel', email: 'alex@lawfirm.test', timeZone: 'America/New_York' },
        attendees: [{ email: `client${i}.${this.run}@example.com`, name: `Client ${i}`, timeZone: 'UTC' }],
        location: 'https://cal.com/video/soak',
        uid: `soak${this.run}${i}${randomBytes(3).toString('hex')}`,
        bookingId: i,
        status: 'ACCEPTED',
      },
    });
    const res = await fetch(`${this.base}/api/v2/${this.direct.slug}/booking-webhook`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'X-Cal-Signature-256': createHmac('sha256', this.direct.bookingSecret).update(raw).digest('hex'),
      },
      body: raw,
    });
    await res.arrayBuffer();
    if (res.status >= 300) throw new Error(`booking-webhook: ${res.status}`);
  }

  /** Starts a Clio connect and never finishes it (the consent page closed). */
  private async clioConnect(): Promise<void> {
    this.counts.clioConnects++;
    const res = await fetch(`${this.base}/api/integrations/clio/connect?firmSlug=${this.direct.slug}`, {
      headers: { Authorization: `Bearer ${this.adminKey}` },
      redirect: 'manual',
    });
    await res.arrayBuffer();
    if (res.status !== 302) throw new Error(`clio connect: ${res.status}`);
  }
}
