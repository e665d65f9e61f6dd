// The exactly-once scenario of workflow runs, shared by test/workflows/workflow-crash.test.ts (30
// leads, one SIGKILL) and bench/workflows-exactly-once.ts (200 leads, three): a workflow that mails,
// posts to Slack, opens a Clio matter and calls each new lead; the leads arrive while real worker
// processes (workers/main.ts, as the Procfile runs them) are SIGKILLed mid-way, one after another;
// then the fakes' own logs are counted.
import type { ChildProcess } from 'node:child_process';
import type { Db } from 'mongodb';
import { COLLECTIONS } from '../../core/platform/db/collections.js';
import type { ApiClient } from '../helpers/client.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import type { FakeClio } from '../fakes/clio-server.js';
import type { FakeSlack } from '../fakes/slack-server.js';
import type { FakeSmtp } from '../fakes/smtp-server.js';

export const CRASH_TEAM = 'crash-team@firm.test';

/** The environment that lets a killed worker's jobs, locks and leases be taken over in seconds. */
export const CRASH_ENV = {
  JOB_LOCK_MS: '2000',
  EFFECT_LEASE_MS: '3000',
  EFFECT_LEASE_CLOCK_MARGIN_MS: '500',
  // A mail's or a Slack post's lease lasts this much longer than EFFECT_LEASE_MS.
  SMTP_SEND_TIMEOUT_MS: '3000',
  SLACK_TIMEOUT_MS: '3000',
  CALL_LOCK_MS: '2000',
  SIM_CALL_MS: '200',
};

export interface ExactlyOnceFigures {
  leads: number;
  kills: number;
  seconds: number;
  runs_completed: number;
  runs_other: number;
  mails: number;
  mails_distinct: number;
  slack: number;
  slack_distinct: number;
  matters: number;
  matters_distinct: number;
  dials: number;
  dials_distinct: number;
  /** Steps whose effect was attempted more than once (taken over from a killed worker). */
  steps_retried: number;
  /** When each SIGKILL was sent (ms since epoch). */
  kills_at: number[];
  /** Each mail the SMTP server accepted more than once: when it accepted each copy (ms since epoch). */
  repeated_mails: Array<{ message_id: string; accepted_at: number[] }>;
  /** Each Slack message accepted more than once, likewise. */
  repeated_slack: Array<{ text: string; accepted_at: number[] }>;
}

/** The keys seen more than once, with when each copy was accepted (ascending). */
function repeats(items: Array<{ key: string; at: number }>): Array<{ key: string; at: number[] }> {
  const byKey = new Map<string, number[]>();
  for (const { key, at } of items) byKey.set(key, [...(byKey.get(key) ?? []), at]);
  return [...byKey.entries()]
    .filter(([, at]) => at.length > 1)
    .map(([key, at]) => ({ key, at: at.sort((a, b) => a - b) }));
}

interface Context {
  env: Record<string, string>;
  admin: ApiClient;
  api: ApiClient;
  db: Db;
  smtp: FakeSmtp;
  clio: FakeClio;
  slack: FakeSlack;
  log?: (line: string) => void;
  /** Who takes over after the last kill (default: another worker process). */
  takeOver?: () => Promise<{ stop(): Promise<void> }>;
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function exactlyOnce(
  ctx: Context,
  options: {
    leads: number;
    kills: number;
    timeoutMs: number;
    /**
     * Each kill comes once the SMTP server has accepted its share of the mails, at once (0, the
     * default: the worst case, a kill right after a mail was accepted) or up to this many ms later
     * (uniformly drawn: a kill that does not follow the mails).
     */
    killJitterMs?: number;
  },
): Promise<ExactlyOnceFigures> {
  const started = Date.now();
  const slug = `crash-${Math.random().toString(36).slice(2, 8)}`;
  const slackUrl = ctx.slack.webhookUrl();
  const firm = await ctx.admin.post('/api/firms', {
    slug,
    name: 'Crash & Partners',
    settings: {
      slack_webhook_url: slackUrl,
      crm: { provider: 'clio', access_token: ctx.clio.token, base_url: ctx.clio.url },
    },
  });
  if (firm.status !== 200) throw new Error(`firm: ${JSON.stringify(firm.body)}`);
  const key = await ctx.admin.post('/api/auth/api-keys', { firmSlug: slug, name: 'crash' });
  const client = ctx.api.withToken(key.body.key as string);
  const agent = await client.post('/api/v2/create-agent', {
    firmSlug: slug,
    agent_name: 'Caller',
    voice_id: 'sim-en-us-ava',
  });
  const created = await client.post('/api/workflows', {
    firmSlug: slug,
    name: 'Every new lead',
    nodes: [
      { id: 'new', type: 'trigger.event', data: { event: 'lead.created' } },
      {
        id: 'mail',
        type: 'send_email',
        data: { to: [CRASH_TEAM], subject: 'New lead {{lead.first_name}}', body: 'x' },
      },
      { id: 'slack', type: 'notify_slack', data: { text: 'wf-crash {{lead.first_name}}' } },
      { id: 'matter', type: 'clio.create_matter', data: { description: 'Intake {{lead.first_name}}' } },
      { id: 'ring', type: 'call', data: { agent_id: agent.body.agent_id } },
    ],
    edges: [
      { id: 'a', source: 'new', target: 'mail' },
      { id: 'b', source: 'mail', target: 'slack' },
      { id: 'c', source: 'slack', target: 'matter' },
      { id: 'd', source: 'matter', target: 'ring' },
    ],
  });
  const workflowId = created.body.id as string;
  const activated = await client.post(`/api/workflows/${workflowId}/activate`, {});
  if (activated.status !== 200) throw new Error(`activate: ${JSON.stringify(activated.body)}`);

  const runs = ctx.db.collection(COLLECTIONS.workflowRuns);
  const mailsNow = () => ctx.smtp.messages.filter((m) => m.to.includes(CRASH_TEAM)).length;
  let child: ChildProcess | null = startWorkerProcess(ctx.env);
  let last: { stop(): Promise<void> } | null = null;
  const killsAt: number[] = [];
  try {
    // The leads arrive while the worker runs; each is a first name of its own and a number that
    // does not answer (ends in 0000), so the follow-up calls add no intake effects of their own.
    const names = Array.from({ length: options.leads }, (_, i) => `Lead${String(i).padStart(4, '0')}`);
    for (let i = 0; i < names.length; i += 10) {
      await Promise.all(
        names.slice(i, i + 10).map(async (first_name, k) => {
          const n = i + k;
          const res = await client.post('/api/leads', {
            firmSlug: slug,
            first_name,
            email: `${first_name.toLowerCase()}@crash.test`,
            phone: `+1415${String(200 + (n % 700)).padStart(3, '0')}${n >= 700 ? '1' : '0'}000`,
          });
          if (res.status !== 200) throw new Error(`lead: ${JSON.stringify(res.body)}`);
        }),
      );
    }
    for (let kill = 1; kill <= options.kills; kill++) {
      // Mid-way: after a share of the mails has gone, while steps are in flight.
      const target = Math.floor((options.leads * kill) / (options.kills + 1));
      await until(async () => mailsNow() >= target, options.timeoutMs, `${target} mails before kill ${kill}`);
      if (options.killJitterMs)
        await new Promise((r) => setTimeout(r, Math.random() * options.killJitterMs!));
      const exited = exitOf(child!);
      killsAt.push(Date.now());
      child!.kill('SIGKILL');
      await exited;
      ctx.log?.(`kill ${kill}: SIGKILL after ${mailsNow()} mails`);
      if (kill === options.kills && ctx.takeOver !== undefined) {
        last = await ctx.takeOver();
        child = null;
      } else {
        child = startWorkerProcess(ctx.env);
      }
    }
    await until(
      async () =>
        (await runs.countDocuments({ workflow_id: workflowId, status: { $ne: 'running' } })) ===
        options.leads,
      options.timeoutMs,
      'every run to end',
    );
    // The last dials' simulated calls finish on their own; the dial log is written before the answer.
    await until(
      async () =>
        (await ctx.db.collection(COLLECTIONS.simulatorCalls).countDocuments({ 'metadata.firm': slug })) >=
        options.leads,
      options.timeoutMs,
      'every dial',
    );
  } finally {
    if (child !== null) {
      const exited = exitOf(child);
      child.kill('SIGTERM');
      await exited;
    }
    await last?.stop();
  }

  const mails = ctx.smtp.messages.filter((m) => m.to.includes(CRASH_TEAM));
  const slackAccepted = ctx.slack.messages(slackUrl);
  const slackPosts = slackAccepted.map((m) => JSON.stringify(m.body));
  const matters = ctx.clio.matters.filter(
    (m) => m.client_reference?.startsWith('wf_') && m.description.startsWith('Intake Lead'),
  );
  const dials = await ctx.db.collection(COLLECTIONS.simulatorCalls).find({ 'metadata.firm': slug }).toArray();
  const steps = await ctx.db
    .collection(COLLECTIONS.workflowSteps)
    .countDocuments({ firm: slug, 'effect.attempts': { $gt: 1 } });
  return {
    leads: options.leads,
    kills: options.kills,
    seconds: Math.round((Date.now() - started) / 100) / 10,
    runs_completed: await runs.countDocuments({ workflow_id: workflowId, status: 'completed' }),
    runs_other: await runs.countDocuments({ workflow_id: workflowId, status: { $ne: 'completed' } }),
    mails: mails.length,
    mails_distinct: new Set(mails.map((m) => m.header('message-id'))).size,
    slack: slackPosts.length,
    slack_distinct: new Set(slackPosts).size,
    matters: matters.length,
    matters_distinct: new Set(matters.map((m) => m.client_reference)).size,
    dials: dials.length,
    dials_distinct: new Set(dials.map((d) => (d as { metadata?: { call_id?: string } }).metadata?.call_id))
      .size,
    steps_retried: steps,
    kills_at: killsAt,
    repeated_mails: repeats(mails.map((m) => ({ key: m.header('message-id') ?? '', at: m.at }))).map((r) => ({
      message_id: r.key,
      accepted_at: r.at,
    })),
    repeated_slack: repeats(slackAccepted.map((m) => ({ key: String(m.body?.text), at: m.at }))).map((r) => ({
      text: r.key,
      accepted_at: r.at,
    })),
  };
}
