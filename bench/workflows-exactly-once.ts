// Workflow runs exactly once under SIGKILL, at volume: BENCH_WF_LEADS new leads (default 200) each
// start a run that mails, posts to Slack, opens a Clio matter and calls (the scenario of
// test/workflows/exactly-once.ts), while the worker process (workers/main.ts, a child as the
// Procfile runs it) is SIGKILLed BENCH_WF_KILLS times (default 3) mid-way, a new one taking over
// each time. Prints the fakes' own counts (SMTP, Slack, Clio, the simulator's dial log), the runs'
// statuses and how many steps were taken over from a killed worker.
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
import { knob, loadAverage, say } from './lib/measure.js';

const LEADS = knob('BENCH_WF_LEADS', 200, 5000);
const KILLS = knob('BENCH_WF_KILLS', 3, 20);

async function main(): Promise<void> {
  deadline(30 * 60_000);
  const stores = await startStores();
  const [smtp, clio, slack] = await Promise.all([startFakeSmtp(), startFakeClio(), startFakeSlack()]);
  atExit(() => Promise.all([smtp.stop(), clio.close(), slack.close()]));
  const port = await freePort();
  const { env, adminKey } = freshEnvironment(stores, 'workflows-exactly-once', {
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    SMTP_URL: smtp.url,
    ...CRASH_ENV,
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

main()
  .catch((err: unknown) => {
    say(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
