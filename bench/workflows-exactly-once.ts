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
import { CRASH_ENV, exactlyOnce } from '../test/workflows/exactly-once.js';
import { atExit, cleanup, deadline, freshEnvironment, startStores } from './lib/stack.js';
import { knob, loadAverage, percentile, say } from './lib/measure.js';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { stepDigest } from '../core/domain/workflows/runs/run-store.js';
import type { EffectTiming } from '../core/platform/db/effect-recorder.js';
import type { FakeSmtp } from '../test/fakes/smtp-server.js';

const LEADS = knob('BENCH_WF_LEADS', 200, 5000);
const KILLS = knob('BENCH_WF_KILLS', 3, 20);

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
  say(`workflows-exactly-once: ${LEADS} leads, ${KILLS} SIGKILLs (load ${loadAverage()})`);
  const figures = await exactlyOnce(
    { env, admin: api.withToken(adminKey), api, db: services.mongo.db, smtp, clio, slack, log: say },
    { leads: LEADS, kills: KILLS, timeoutMs: 15 * 60_000 },
  );
  say(JSON.stringify(figures, null, 2));
  say(JSON.stringify(await windows(timingFile, smtp, figures.kills_at), null, 2));
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

/** The residual window, measured, and where each repeated mail came from. */
async function windows(file: string, smtp: FakeSmtp, killsAt: number[]) {
  const timings = (await readFile(file, 'utf8').catch(() => ''))
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as EffectTiming & { pid: number });
  const of = (node: string) => timings.filter((t) => t.subject.split('|')[1] === node);
  const stored = (ts: EffectTiming[]) =>
    ts.filter((t) => t.outcome_stored_at !== null).map((t) => t.outcome_stored_at! - t.answered_at);
  // The fake's `at` is when it wrote its 250 (same host clock as the workers).
  const acceptedAt = new Map<string, number[]>();
  for (const m of smtp.messages) {
    const id = m.header('message-id') ?? '';
    acceptedAt.set(id, [...(acceptedAt.get(id) ?? []), m.at]);
  }
  const wire = of('mail').flatMap((t) => {
    const at = acceptedAt.get(`<workflow-step.${stepDigest(t.subject)}@127.0.0.1>`);
    return at === undefined ? [] : [t.answered_at - Math.max(...at)];
  });
  const repeated = [...acceptedAt.entries()]
    .filter(([, at]) => at.length > 1)
    .map(([id, at]) => {
      const first = Math.min(...at);
      const kill = killsAt.findIndex((k) => k >= first);
      return {
        message_id: id,
        first_accepted_ms_before_kill: kill === -1 ? null : killsAt[kill]! - first,
        kill: kill + 1,
        resent_after_ms: Math.max(...at) - first,
      };
    });
  return {
    mail_250_written_to_read_ms: stats(wire),
    mail_250_read_to_outcome_stored_ms: stats(stored(of('mail'))),
    mail_250_read_to_step_record_ms: stats(of('mail').map((t) => t.recorded_at - t.answered_at)),
    mail_send_ms: stats(of('mail').map((t) => t.answered_at - t.sent_at)),
    slack_answer_read_to_outcome_stored_ms: stats(stored(of('slack'))),
    slack_answer_read_to_step_record_ms: stats(of('slack').map((t) => t.recorded_at - t.answered_at)),
    repeated_mails: repeated,
  };
}

main()
  .catch((err: unknown) => {
    say(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
