// What the dial gate costs: create-outbound-call over HTTP, and a campaign's calls end to end
// (each campaign-call job's work — the request stage, the dial slot, the call — then each
// place-call job's dial with the simulator — the dial stage), with the gate and with it bypassed
// (core/domain/compliance/dial-gate.ts `gateBypass`, set only here), in alternating rounds of
// the same run, so the ratio is measured against a baseline on the same machine at the same time.
// The gate's answer is `allow` (hours and caps widened), its full path: the rules, the Redis
// count, the decision records.
//   npx tsx bench/dial-gate.ts   (BENCH_GATE_CALLS=300 per round, BENCH_GATE_ROUNDS=3,
//                                 BENCH_CONCURRENCY=16)
// Not part of `npm test`. Starts its own Redis and FerretDB (the local ones) and stops them.
import { loadConfig } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { createServices } from '../core/wiring/services.js';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import { startWeb } from '../api/web.js';
import { gateBypass } from '../core/domain/compliance/dial-gate.js';
import { rebuildDncIndex } from '../core/domain/compliance/dnc-index.js';
import { runCampaignCall } from '../core/domain/campaigns/campaign-calls.js';
import { campaignCallId } from '../core/domain/campaigns/campaign-store.js';
import { fanOutCampaign } from '../core/domain/campaigns/campaign-fanout.js';
import { placeOutboundCall } from '../core/domain/calls/call-dialing.js';
import { redisKeys } from '../core/platform/redis-keys.js';
import { ApiClient } from '../test/helpers/client.js';
import { atExit, cleanup, deadline, freshEnvironment, rand, startStores } from './lib/stack.js';
import { knob, loadAverage, loop, median, say } from './lib/measure.js';

const CALLS = knob('BENCH_GATE_CALLS', 300, 1000);
const ROUNDS = knob('BENCH_GATE_ROUNDS', 3, 20);
const CONCURRENCY = knob('BENCH_CONCURRENCY', 16, 256);

let numberSeq = 0;
const nextNumbers = (n: number): string[] =>
  Array.from({ length: n }, () => `+1212${String(2_000_000 + ++numberSeq).padStart(7, '0')}`);

async function main(): Promise<void> {
  deadline(30 * 60_000);
  const stores = await startStores();
  const { env, adminKey } = freshEnvironment(stores, 'dial-gate', {
    CALLING_HOURS: '00:00-24:00',
    DIAL_ATTEMPTS_PER_DAY: '1000000',
    COMPLIANCE_STATE_RULES: 'true',
    PORT: '0',
    PUBLIC_BASE_URL: 'http://127.0.0.1:1',
  });
  const config = loadConfig(env);
  const services = createServices(config, createLogger('warn', 'bench'), 'producer');
  atExit(() => services.mongo.db.dropDatabase().then(() => services.close()));
  await ensureIndexes(services.mongo.db);
  const web = await startWeb(services, '127.0.0.1');
  atExit(() => web.stop());
  const admin = new ApiClient(`http://127.0.0.1:${web.port}`).withToken(adminKey);
  const slug = `bench-${rand()}`;
  const ok = (res: { status: number; body: unknown }, what: string): Record<string, string> => {
    if (res.status !== 200) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Record<string, string>;
  };
  ok(
    await admin.post('/api/firms', { slug, name: 'Bench', settings: { max_concurrent_calls: 1000 } }),
    'firm',
  );
  // The firm's do-not-call index, as a worker builds it on the first request (dnc-index.ts):
  // the steady state is measured, not its first seconds.
  await rebuildDncIndex(services, slug);
  const agentId = ok(
    await admin.post('/api/v2/create-agent', {
      firmSlug: slug,
      agent_name: 'Intake',
      voice_id: 'sim-en-us-ava',
      begin_message: 'Hello.',
      intake_questions: [{ key: 'full_name', question: 'Your name?' }],
    }),
    'agent',
  ).agent_id!;
  const freeSlots = () => services.redis.del(redisKeys(config).dialSlots(slug));

  /** create-outbound-call: `CALLS` requests, `CONCURRENCY` at once; ms per call (wall / calls). */
  async function createCalls(): Promise<number> {
    const numbers = nextNumbers(CALLS);
    const rate = await loop(CONCURRENCY, CALLS, async (i) =>
      ok(
        await admin.post('/api/v2/create-outbound-call', { firmSlug: slug, agentId, toNumber: numbers[i] }),
        'create-outbound-call',
      ),
    );
    return (rate.seconds * 1000) / CALLS;
  }

  /** A campaign of `CALLS` leads: its campaign-call jobs' work, then each call's dial; ms per lead. */
  async function campaignRound(): Promise<number> {
    const numbers = nextNumbers(CALLS);
    const created = ok(
      await admin.post('/api/leads/campaigns', {
        firmSlug: slug,
        agentId,
        name: 'Bench',
        // Marketing (the default) with written consent: the consent rule is on the measured path.
        leads: numbers.map((phone) => ({
          phone,
          consent: {
            kind: 'written',
            text: 'Agreed to calls (bench).',
            obtained_at: '2026-01-01T00:00:00Z',
            source: 'bench',
          },
        })),
      }),
      'campaign',
    );
    const campaignId = created.id!;
    ok(await admin.post(`/api/leads/campaigns/${campaignId}/launch`), 'launch');
    await fanOutCampaign(services, campaignId);
    await freeSlots();
    const started = performance.now();
    await loop(CONCURRENCY, CALLS, async (i) => {
      const job = { campaignId, firm: slug, phone: numbers[i]!, attempt: 1 };
      const step = await runCampaignCall(services, job, `bench\t${i}`);
      if (step.kind !== 'done' || step.outcome !== 'registered') throw new Error(JSON.stringify(step));
      const callId = campaignCallId(campaignId, numbers[i]!, 1);
      const dial = await placeOutboundCall(services, callId, { lastAttempt: false }, `bench\t${callId}`);
      if (dial.outcome !== 'placed') throw new Error(`dial ${callId}: ${dial.outcome}`);
    });
    const ms = (performance.now() - started) / CALLS;
    await freeSlots();
    return ms;
  }

  const results: Record<string, { gate: number[]; bypass: number[] }> = {
    'create-outbound-call': { gate: [], bypass: [] },
    'campaign call (request + dial)': { gate: [], bypass: [] },
  };
  // A warm-up of each, unmeasured.
  await createCalls();
  await campaignRound();
  for (let round = 0; round < ROUNDS; round++) {
    for (const bypass of round % 2 === 0 ? [false, true] : [true, false]) {
      gateBypass.on = bypass;
      const key = bypass ? 'bypass' : 'gate';
      results['create-outbound-call']![key].push(await createCalls());
      results['campaign call (request + dial)']![key].push(await campaignRound());
      say(`round ${round + 1}/${ROUNDS} ${key} done (load ${loadAverage()})`);
    }
  }
  gateBypass.on = false;
  const rows = Object.entries(results).map(([what, r]) => {
    const gate = median(r.gate);
    const bypass = median(r.bypass);
    return {
      what,
      'gate ms/call': gate.toFixed(2),
      'bypassed ms/call': bypass.toFixed(2),
      ratio: (gate / bypass).toFixed(3),
      overhead: `${((gate / bypass - 1) * 100).toFixed(1)} %`,
      rounds: `gate ${r.gate.map((x) => x.toFixed(1)).join('/')}; bypassed ${r.bypass.map((x) => x.toFixed(1)).join('/')}`,
    };
  });
  console.log(
    `dial gate: ${CALLS} calls per round, ${ROUNDS} rounds each way, concurrency ${CONCURRENCY}, load ${loadAverage()}`,
  );
  console.table(rows);
}

main()
  .catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(() => cleanup());
