// Exactly once under SIGKILL (docs/workflows.md#runs): 20 new leads each start a run that mails,
// posts to Slack, opens a Clio matter and calls; the worker process running them is SIGKILLed
// mid-way and another takes over. Every mail, Slack message, matter and call happens once (the
// SMTP server's, Slack's, Clio's and the simulator's own logs), and no run is left running. The
// 200-lead, three-kill version is bench/workflows-exactly-once.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { startStack, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { CRASH_ENV, exactlyOnce } from './exactly-once.js';

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;

beforeAll(async () => {
  [smtp, clio, slack] = await Promise.all([startFakeSmtp(), startFakeClio(), startFakeSlack()]);
  // No in-process workers: the worker is a child process, killed for real.
  stack = await startStack({ env: { SMTP_URL: smtp.url, ...CRASH_ENV } });
});
afterAll(async () => {
  await stack?.stop();
  await Promise.all([smtp?.stop(), clio?.close(), slack?.close()]);
});

describe('workflow runs when the worker is SIGKILLed mid-way', () => {
  it('mail, Slack, Clio matter and call each exactly once per lead; no run stuck', async () => {
    const figures = await exactlyOnce(
      {
        env: stack.env,
        admin: stack.admin,
        api: stack.api,
        db: stack.services.mongo.db,
        smtp,
        clio,
        slack,
        // After the kill, workers in this process take over (no second process to start).
        takeOver: async () => startInProcessWorkers(stack),
      },
      { leads: 20, kills: 1, timeoutMs: 90_000 },
    );
    console.log(`workflow exactly-once: ${JSON.stringify(figures)}`);
    expect(figures).toMatchObject({
      runs_completed: 20,
      runs_other: 0,
      matters: 20,
      matters_distinct: 20,
      dials: 20,
      dials_distinct: 20,
      mails_distinct: 20,
      slack_distinct: 20,
    });
    // A mail or a Slack post cannot be asked about afterwards. Its answer is stored the moment it
    // is read, and the attempt taking over records it; a kill after the server accepted it and
    // before that answer was stored is the only way to send it again (docs/workflows.md
    // "Exactly once, measured"): so a repeat's first copy went before the kill, its second after
    // it, and each is a step taken over (a mail with the same Message-ID, counted once above).
    const killedAt = figures.kills_at[0]!;
    for (const repeat of [...figures.repeated_mails, ...figures.repeated_slack]) {
      expect(repeat.accepted_at).toHaveLength(2);
      expect(repeat.accepted_at[0]).toBeLessThanOrEqual(killedAt);
      expect(repeat.accepted_at[1]).toBeGreaterThan(killedAt);
    }
    expect(figures.mails - figures.mails_distinct).toBeLessThanOrEqual(figures.steps_retried);
    expect(figures.slack - figures.slack_distinct).toBeLessThanOrEqual(figures.steps_retried);
  }, 120_000);
});
