// Workflow runs exactly once under SIGKILL, at volume: BENCH_WF_LEADS new leads (default 200) each
// start a run that mails, posts to Slack, opens a Clio matter and calls (the scenario of
// test/workflows/exactly-once.ts), while the worker process (workers/main.ts, a child as the
// Procfile runs it) is SIGKILLed BENCH_WF_KILLS times (default 3) mid-way, a new one taking over
// each time. Prints the fakes' own counts (SMTP, Slack, Clio, the simulator's dial log), the runs'
// statuses and how many steps were taken over from a killed worker; then, from the workers' effect
// timings (EFFECT_TIMING_FILE), the window a kill could still make a mail or a Slack post repeat —
// the server's 250 written → read by the worker, and read → its outcome stored — and, for each
// repeated Message-ID, how long before a kill the server had accepted its first copy.
//   npx tsx bench/workflows-exactly-once.ts   (BENCH_WF_LEADS=200, BENCH_WF_KILLS=3)
// Not part of `npm test`. Starts its own Redis and FerretDB (the local ones) unless REDIS_URL /
// MONGODB_URI are set; the web process runs here, the workers are children; removes everything.
import { loadConfig } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { createServices } from '../core/wiring/services.js';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import { startWeb } from '../api/web.js';
import { freePort } from '../scripts/local/ports.js';
import { ApiClient } from '../test/helpers/client.js';
import { startFakeSmtp } from '../test/fakes/smtp-server.js';
import { startFakeClio } from '../test/fakes/clio-server.js';
import { startFakeSlack } from '../test/fakes/slack-server.js';
import { CRASH_ENV, exactlyOnce, type ExactlyOnceFigures } from '../test/workflows/exactly-once.js';
import { atExit, cleanup, deadline, freshEnvironment, startStores } from './lib/stack.js';
import { described, knob, loadAverage, percentile, say } from './lib/measure.js';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { stepDigest } from '../core/domain/workflows/runs/run-store.js';
import type { EffectTiming } from '../core/platform/db/effect-records.js';
import type { FakeSmtp } from '../test/fakes/smtp-server.js';

const LEADS = knob('BENCH_WF_LEADS', 200, 5000);
const KILLS = knob('BENCH_WF_KILLS', 3, 20);
// 0: each kill right after its share of mails was accepted (the worst case); else up to this many ms later.
const KILL_JITTER_MS = knob('BENCH_WF_KILL_JITTER_MS', 0, 60_000);

async function main(): Promise<void> {
  deadline(30 * 60_000);
  const stores = await startStores();
  const [smtp, clio, slack] = await Promise.all([startFakeSmtp(), startFakeClio(), startFakeSlack()]);
  atExit(() => Promise.all([smtp.stop(), clio.close(), slack.close()]));
  const timingFile = join(tmpdir(), `wf-effect-timing-${randomBytes(4).toString('hex')}.jsonl`);
  atExit(() => rm(timingFile, { force: true }));
  const port = await freePort();
  const { env, adminKey } = freshEnvironment(stores, 'workflows-exactly-once', {
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    SMTP_URL: smtp.url,
    ...CRASH_ENV,
    EFFECT_TIMING_FILE: timingFile,
  });
  const config = loadConfig(env);
  const services = createServices(config, createLogger('warn', 'bench'), 'producer');
  atExit(() => services.mongo.db.dropDatabase().then(() => services.close()));
  await ensureIndexes(services.mongo.db);
  const web = await startWeb(services, '127.0.0.1');
  atExit(() => web.stop());
  const api = new ApiClient(`http://127.0.0.1:${web.port}`);
  say(
    `workflows-exactly-once: ${LEADS} leads, ${KILLS} SIGKILLs, kill jitter ${KILL_JITTER_MS} ms (load ${loadAverage()})`,
  );
  const figures = await exactlyOnce(
    { env, admin: api.withToken(adminKey), api, db: services.mongo.db, smtp, clio, slack, log: say },
    { leads: LEADS, kills: KILLS, timeoutMs: 15 * 60_000, killJitterMs: KILL_JITTER_MS },
  );
  const { repeated_mails: _m, repeated_slack: _s, ...counts } = figures;
  say(JSON.stringify(counts, null, 2));
  say(JSON.stringify(await windows(timingFile, smtp, figures), null, 2));
  const exact =
    figures.runs_completed === LEADS &&
    figures.runs_other === 0 &&
    [
      figures.mails_distinct,
      figures.slack_distinct,
      figures.matters,
      figures.matters_distinct,
      figures.dials,
      figures.dials_distinct,
    ].every((n) => n === LEADS);
  say(
    exact
      ? `each mail, Slack message, matter and call once per lead (raw mails ${figures.mails}, raw Slack posts ${figures.slack})`
      : 'NOT exactly once: see the figures',
  );
  if (!exact) process.exitCode = 1;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: percentile(s, 0.5), p99: percentile(s, 0.99), max: s.at(-1) ?? NaN };
};

/** The residual window, measured, and where each repeated mail or Slack post came from. */
async function windows(file: string, smtp: FakeSmtp, figures: ExactlyOnceFigures) {
  const timings = (await readFile(file, 'utf8').catch(() => ''))
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as EffectTiming & { pid: number });
  const all = (node: string) => timings.filter((t) => t.subject.split('|')[1] === node);
  const of = (node: string) => all(node).filter((t) => t.kind === 'recorded');
  const recovered = (node: string) => all(node).filter((t) => t.kind === 'recovered').length;
  const stored = (ts: EffectTiming[]) =>
    ts.filter((t) => t.outcome_stored_at !== null).map((t) => t.outcome_stored_at! - t.answered_at);
  // The fake's `at` is when it wrote its 250 (same host clock as the workers).
  const acceptedAt = new Map<string, number>();
  for (const m of smtp.messages) acceptedAt.set(m.header('message-id') ?? '', m.at);
  const wire = of('mail').flatMap((t) => {
    const at = acceptedAt.get(`<workflow-step.${stepDigest(t.subject)}@127.0.0.1>`);
    return at === undefined ? [] : [t.answered_at - at];
  });
  /** Where a repeat's first copy stands against the kills: accepted this long before the next one. */
  const placed = (at: number[]) => {
    const kill = figures.kills_at.findIndex((k) => k >= at[0]!);
    return {
      kill: kill === -1 ? null : kill + 1,
      first_accepted_ms_before_kill: kill === -1 ? null : figures.kills_at[kill]! - at[0]!,
      again_after_ms: at.at(-1)! - at[0]!,
    };
  };
  // How soon after the SMTP server's last 250 each kill came: the kill follows the mail count.
  const accepts = smtp.messages.map((m) => m.at);
  const killAfterLastAccept = figures.kills_at.map((k) => k - Math.max(...accepts.filter((a) => a <= k)));
  return {
    kill_ms_after_last_250: killAfterLastAccept,
    mail_250_written_to_read_ms: stats(wire),
    mail_250_read_to_outcome_stored_ms: stats(stored(of('mail'))),
    mail_250_read_to_step_record_ms: stats(of('mail').map((t) => t.recorded_at - t.answered_at)),
    mail_send_ms: stats(of('mail').map((t) => t.answered_at - t.sent_at!)),
    // Answers a killed worker had stored, recorded by the next attempt instead of a second send.
    mails_recovered_from_stored_answer: recovered('mail'),
    slack_recovered_from_stored_answer: recovered('slack'),
    slack_answer_read_to_outcome_stored_ms: stats(stored(of('slack'))),
    slack_answer_read_to_step_record_ms: stats(of('slack').map((t) => t.recorded_at - t.answered_at)),
    repeated_mails: figures.repeated_mails.map((r) => ({
      message_id: r.message_id,
      ...placed(r.accepted_at),
    })),
    repeated_slack: figures.repeated_slack.map((r) => ({ text: r.text, ...placed(r.accepted_at) })),
  };
}

main()
  .catch((err: unknown) => {
    say(`failed: ${described(err)}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
