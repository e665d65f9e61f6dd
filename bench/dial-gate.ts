// What the dial gate costs: create-outbound-call over HTTP, and a campaign's calls end to end
// (each campaign-call job's work — the request stage, the dial slot, the call — then each
// place-call job's dial with the simulator — the dial stage), with the gate and with it bypassed
// (core/domain/compliance/dial-gate.ts `gateBypass`, set only here), in alternating rounds of
// the same run, so the ratio is measured against a baseline on the same machine at the same time.
// The gate's answer is `allow` (hours and caps widened), its full path: the rules, the Redis
// count, the decision records. Each way it prints the wall time per call and the CPU per call
// of the whole stack (this process — client, API and jobs in one — Redis, FerretDB, PostgreSQL),
// each as the median of the rounds' own ratios, and the MongoDB and Redis commands one call issues.
//   npx tsx bench/dial-gate.ts   (BENCH_GATE_CALLS=300 per round, BENCH_GATE_ROUNDS=5,
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
import { atExit, deadline, freshEnvironment, rand, startStores, runScript } from './lib/stack.js';
import { knob, loadAverage, loop, median, say, stackCpuSeconds } from './lib/measure.js';
import { formatOps, opsPerCall } from './lib/ops.js';
import { rebuildFirmAttempts } from '../core/domain/compliance/frequency.js';

const CALLS = knob('BENCH_GATE_CALLS', 300, 1000);
const ROUNDS = knob('BENCH_GATE_ROUNDS', 5, 20);
const CONCURRENCY = knob('BENCH_CONCURRENCY', 16, 256);

/** A round's wall time per call, and the CPU per call of each process group of the stack. */
interface Measured {
  ms: number;
  cpu: Record<string, number>;
}

async function measuredRun(calls: number, run: () => Promise<void>): Promise<Measured> {
  const before = stackCpuSeconds();
  const started = performance.now();
  await run();
  const ms = (performance.now() - started) / calls;
  const after = stackCpuSeconds();
  const cpu: Record<string, number> = {};
  for (const [group, used] of Object.entries(after))
    cpu[group] = ((used - (before[group] ?? 0)) * 1000) / calls;
  return { ms, cpu };
}

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
  // The firm's do-not-call index and its dial attempts' mark, as a worker makes them on the first
  // request (dnc-index.ts, frequency.ts): the steady state is measured, not its first seconds.
  await rebuildDncIndex(services, slug);
  await rebuildFirmAttempts(services, slug);
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
  const createCall = async (phone: string) =>
    ok(
      await admin.post('/api/v2/create-outbound-call', { firmSlug: slug, agentId, toNumber: phone }),
      'create-outbound-call',
    );
  async function createCalls(): Promise<Measured> {
    const numbers = nextNumbers(CALLS);
    return measuredRun(
      CALLS,
      async () => void (await loop(CONCURRENCY, CALLS, (i) => createCall(numbers[i]!))),
    );
  }

  /** A campaign of `CALLS` leads: its campaign-call jobs' work, then each call's dial; ms per lead. */
  async function campaignRound(
    calls = CALLS,
    concurrency = CONCURRENCY,
    counted?: (run: () => Promise<void>) => Promise<unknown>,
  ): Promise<Measured> {
    const numbers = nextNumbers(calls);
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
    const one = async (i: number): Promise<void> => {
      const job = { campaignId, firm: slug, phone: numbers[i]!, attempt: 1 };
      const step = await runCampaignCall(services, job, `bench\t${i}`);
      if (step.kind !== 'done' || step.outcome !== 'registered') throw new Error(JSON.stringify(step));
      const callId = campaignCallId(campaignId, numbers[i]!, 1);
      const dial = await placeOutboundCall(services, callId, { lastAttempt: false }, `bench\t${callId}`);
      if (dial.outcome !== 'placed') throw new Error(`dial ${callId}: ${dial.outcome}`);
    };
    const run = async () => void (await loop(concurrency, calls, one));
    const measured = counted === undefined ? await measuredRun(calls, run) : { ms: NaN, cpu: {} };
    if (counted !== undefined) await counted(run);
    await freeSlots();
    return measured;
  }

  type Kind = 'create-outbound-call' | 'campaign call (request + dial)';
  const kinds: Kind[] = ['create-outbound-call', 'campaign call (request + dial)'];
  const results = Object.fromEntries(
    kinds.map((k) => [k, { gate: [] as Measured[], bypass: [] as Measured[] }]),
  ) as Record<Kind, { gate: Measured[]; bypass: Measured[] }>;
  // A warm-up of each, unmeasured.
  await createCalls();
  await campaignRound();
  for (let round = 0; round < ROUNDS; round++) {
    for (const bypass of round % 2 === 0 ? [false, true] : [true, false]) {
      gateBypass.on = bypass;
      const key = bypass ? 'bypass' : 'gate';
      results['create-outbound-call'][key].push(await createCalls());
      results['campaign call (request + dial)'][key].push(await campaignRound());
      say(`round ${round + 1}/${ROUNDS} ${key} done (load ${loadAverage()})`);
    }
  }
  // What each call issues to MongoDB and Redis, one call at a time, each way.
  const ops: Record<string, string> = {};
  for (const bypass of [false, true]) {
    gateBypass.on = bypass;
    const key = bypass ? 'bypassed' : 'gate';
    const fresh = nextNumbers(20);
    ops[`create-outbound-call, ${key}`] = formatOps(
      await opsPerCall(stores.redisUrl, stores.mongodbUri, 20, (i) => createCall(fresh[i]!)),
    );
    await campaignRound(20, 1, async (run) => {
      const counted = await opsPerCall(stores.redisUrl, stores.mongodbUri, 1, run);
      ops[`campaign call, ${key}`] = formatOps({
        mongo: Object.fromEntries(Object.entries(counted.mongo).map(([k, v]) => [k, v / 20])),
        redis: Object.fromEntries(Object.entries(counted.redis).map(([k, v]) => [k, v / 20])),
      });
    });
  }
  gateBypass.on = false;
  const cpuTotal = (m: Measured): number => Object.values(m.cpu).reduce((a, b) => a + b, 0);
  const rows = kinds.map((what) => {
    const r = results[what];
    const gate = median(r.gate.map((m) => m.ms));
    const bypass = median(r.bypass.map((m) => m.ms));
    const gateCpu = median(r.gate.map(cpuTotal));
    const bypassCpu = median(r.bypass.map(cpuTotal));
    // Each round measures both ways back to back: the median of the rounds' own ratios is the
    // figure least moved by what else the machine does meanwhile.
    const paired = (f: (m: Measured) => number): string =>
      `${((median(r.gate.map((g, i) => f(g) / f(r.bypass[i]!))) - 1) * 100).toFixed(1)} %`;
    return {
      what,
      'gate ms/call': gate.toFixed(2),
      'bypassed ms/call': bypass.toFixed(2),
      'wall overhead': paired((m) => m.ms),
      'gate CPU ms/call': gateCpu.toFixed(2),
      'bypassed CPU ms/call': bypassCpu.toFixed(2),
      'CPU overhead': paired(cpuTotal),
    };
  });
  console.log(
    `dial gate: ${CALLS} calls per round, ${ROUNDS} rounds each way, concurrency ${CONCURRENCY}, load ${loadAverage()}`,
  );
  console.table(rows);
  for (const what of kinds) {
    const r = results[what];
    console.log(
      `${what}: wall ms/call by round, gate ${r.gate.map((m) => m.ms.toFixed(2)).join('/')}; bypassed ${r.bypass.map((m) => m.ms.toFixed(2)).join('/')}`,
    );
    const groups = [...new Set([...r.gate, ...r.bypass].flatMap((m) => Object.keys(m.cpu)))].sort();
    const by = (ms: Measured[], g: string) => median(ms.map((m) => m.cpu[g] ?? 0));
    console.log(
      `  CPU ms/call by process (median), gate vs bypassed: ${groups
        .map((g) => `${g} ${by(r.gate, g).toFixed(3)} vs ${by(r.bypass, g).toFixed(3)}`)
        .join(', ')}`,
    );
  }
  for (const [what, line] of Object.entries(ops)) console.log(`ops per call, ${what}: ${line}`);
}

runScript(main);
