// The fault schedule of a chaos run: seeded, so one seed always injects the same faults in the
// same order with the same gaps. One fault at a time (a worker SIGKILLed and started again, a
// worker SIGTERMed at a busy moment, Redis stopped, FerretDB and PostgreSQL stopped), while in
// the background the Slack fake fails half of its requests for a while and the Clio fake
// answers 429 now and then. During an outage the API is probed: /readyz, create-outbound-call
// and the booking webhook, each answer recorded.
import { masters } from '../../core/platform/redis-cluster.js';
import type { Cluster } from './cluster.js';
import { sendOnce } from './http.js';
import type { FaultRecord, Ledger } from './ledger.js';
import type { Rng } from './rng.js';
import type { Workload } from './workload.js';
import { setTimeout as sleep } from 'node:timers/promises';

export interface FaultPlan {
  workerKills: number;
  sigterm: boolean;
  redisOutage: boolean;
  mongoOutage: boolean;
  slackFailures: boolean;
  clio429: boolean;
  /** How long Redis and FerretDB stay down. */
  outageMs: number;
  /** The first fault comes this long after the workload starts. */
  firstAtMs: number;
  /** Gap between two faults (min, max). */
  gapMs: [number, number];
  /** How long the Slack fake fails half of its requests. */
  slackWindowMs: number;
  /** Share of Clio requests answered 429 while the faults run. */
  clio429Rate: number;
  /** How much longer the Slack and Clio faults stay on when no request has met them yet. */
  faultHitWaitMs: number;
  /** How long the SIGTERM waits for a busy moment before it goes anyway. */
  busyWaitMs: number;
}

type SequentialFault = 'kill' | 'sigterm' | 'redis' | 'mongodb';

export class Faults {
  private peakActive = 0;
  private monitoring = false;
  private monitor: Promise<void> | undefined;
  slackFailed = 0;
  clio429s = 0;

  constructor(
    private readonly cluster: Cluster,
    private readonly ledger: Ledger,
    private readonly workload: Workload,
    readonly plan: FaultPlan,
    private readonly rng: Rng,
    private readonly say: (line: string) => void,
  ) {}

  /** Samples active jobs and Redis memory every second until stopped. */
  startMonitor(): void {
    this.monitoring = true;
    this.monitor = (async () => {
      while (this.monitoring) {
        try {
          this.peakActive = Math.max(this.peakActive, await this.cluster.activeJobs());
          const used = await usedMemory(this.cluster);
          if (used !== null) this.ledger.redisMemory.peak = Math.max(this.ledger.redisMemory.peak, used);
        } catch {
          // Redis is down: nothing to sample.
        }
        await sleep(1000);
      }
    })();
  }

  async stopMonitor(): Promise<void> {
    this.monitoring = false;
    await this.monitor;
  }

  /** Runs the whole schedule; resolves when the last fault is over and everything is back. */
  async run(): Promise<void> {
    const order: SequentialFault[] = this.rng.shuffle([
      ...Array.from({ length: this.plan.workerKills }, () => 'kill' as const),
      ...(this.plan.sigterm ? ['sigterm' as const] : []),
      ...(this.plan.redisOutage ? ['redis' as const] : []),
      ...(this.plan.mongoOutage && this.cluster.ferretdb !== undefined ? ['mongodb' as const] : []),
    ]);
    const clioRng = this.rng.fork('clio');
    const slackRng = this.rng.fork('slack');
    if (this.plan.clio429) {
      this.cluster.clio.injectFailure = () => {
        if (!clioRng.chance(this.plan.clio429Rate)) return undefined;
        this.clio429s++;
        return { status: 429, retryAfter: '1' };
      };
    }
    // The Slack window runs beside the other faults, from a seeded moment early in the run.
    const slackWindow = this.plan.slackFailures
      ? sleep(this.plan.firstAtMs + slackRng.int(0, 30_000)).then(() => this.slackWindow(slackRng))
      : Promise.resolve();
    // From firstAtMs, and not before the workload's campaign exists (it is created once, unretried).
    await Promise.all([sleep(this.plan.firstAtMs), this.workload.campaignCreated]);
    for (const fault of order) {
      await this.inject(fault);
      await sleep(this.rng.int(...this.plan.gapMs));
    }
    await slackWindow;
    // On a busy machine the effects can come late: Clio keeps failing until it has failed once.
    await this.untilHit(() => this.clio429s > 0);
    this.cluster.clio.injectFailure = undefined;
  }

  /**
   * A fault's window is a time, but what the run must show is that the fault met traffic: the
   * window stays open until it did, up to `plan.faultHitWaitMs` more (the effects it targets may
   * run late when the machine is loaded).
   */
  private async untilHit(hit: () => boolean): Promise<void> {
    const deadline = Date.now() + this.plan.faultHitWaitMs;
    while (!hit() && Date.now() < deadline) await sleep(250);
  }

  private async slackWindow(rng: Rng): Promise<void> {
    const started = Date.now();
    this.say(`fault: Slack fails 50 % of requests for ${this.plan.slackWindowMs / 1000} s`);
    this.cluster.slack.injectFailure = () => {
      if (!rng.chance(0.5)) return undefined;
      this.slackFailed++;
      return { status: 500 };
    };
    await sleep(this.plan.slackWindowMs);
    await this.untilHit(() => this.slackFailed > 0);
    this.cluster.slack.injectFailure = undefined;
    this.record('slack 50% failures', started, `${this.slackFailed} requests failed`, this.slackFailed > 0);
  }

  private record(kind: string, started: number, detail: string, ok = true): void {
    const fault: FaultRecord = { kind, at: started, durationMs: Date.now() - started, detail, ok };
    this.ledger.faults.push(fault);
    this.say(`fault done: ${kind} (${(fault.durationMs / 1000).toFixed(1)} s) ${detail}`);
  }

  private async inject(fault: SequentialFault): Promise<void> {
    if (fault === 'kill') return this.kill();
    if (fault === 'sigterm') return this.sigterm();
    if (fault === 'redis') return this.redisOutage();
    return this.mongoOutage();
  }

  private async kill(): Promise<void> {
    const started = Date.now();
    const worker = this.rng.int(0, this.cluster.workers.length - 1);
    // A kill means something when jobs are running: wait (a while) for one.
    let active = 0;
    for (const until = Date.now() + 30_000; active === 0 && Date.now() < until;) {
      active = await this.cluster.activeJobs().catch(() => 0);
      if (active === 0) await sleep(200);
    }
    this.say(`fault: SIGKILL worker ${worker + 1} (${active} jobs active)`);
    const at = Date.now();
    const pid = this.cluster.workers[worker]!.process.pid;
    await this.cluster.signalWorker(worker, 'SIGKILL');
    if (pid !== undefined) this.ledger.killedPids.push(pid);
    this.ledger.kills.push({ worker, activeAtKill: active, at });
    this.ledger.abruptEnds.push(at);
    await sleep(this.rng.int(500, 3000));
    this.cluster.startWorker(worker);
    this.record('SIGKILL worker', started, `worker ${worker + 1}, ${active} jobs active`);
  }

  private async sigterm(): Promise<void> {
    const started = Date.now();
    const worker = this.rng.int(0, this.cluster.workers.length - 1);
    // The busiest moment: at least 80 % of the most jobs seen active at once so far.
    let active = 0;
    const until = Date.now() + this.plan.busyWaitMs;
    for (;;) {
      active = await this.cluster.activeJobs().catch(() => 0);
      this.peakActive = Math.max(this.peakActive, active);
      if ((active >= 4 && active >= 0.8 * this.peakActive) || Date.now() > until) break;
      await sleep(200);
    }
    this.say(`fault: SIGTERM worker ${worker + 1} (${active} jobs active, peak ${this.peakActive})`);
    const logBefore = (await this.cluster.workerLog(worker)).length;
    const pid = this.cluster.workers[worker]!.process.pid;
    const result = await this.cluster.signalWorker(worker, 'SIGTERM', 40_000);
    if (result.exitSignal === 'SIGKILL' && pid !== undefined) this.ledger.killedPids.push(pid);
    const lines = (await this.cluster.workerLog(worker)).slice(logBefore);
    const handedBack = lines
      .filter((l) => l.msg === 'handing back unfinished jobs')
      .reduce((n, l) => n + (Array.isArray(l.jobs) ? l.jobs.length : 0), 0);
    if (handedBack > 0) this.ledger.abruptEnds.push(Date.now() - 1000);
    this.ledger.sigterms.push({
      afterMs: result.afterMs,
      exitCode: result.exitCode,
      activeAtSignal: active,
      handedBack,
    });
    this.cluster.startWorker(worker);
    this.record(
      'SIGTERM worker',
      started,
      `worker ${worker + 1}: ${active} jobs active (peak ${this.peakActive}), exit ${result.exitCode ?? result.exitSignal} after ${(result.afterMs / 1000).toFixed(1)} s, ${handedBack} handed back`,
      result.exitCode === 0 && result.afterMs < 25_000,
    );
  }

  /** Probes the API until `until`: /readyz and, in turn, a call and a booking event. */
  private async probe(fault: 'redis' | 'mongodb', until: number): Promise<void> {
    // No probe starts in the last 1.5 s: the outage ends on time, not after a slow answer.
    for (let i = 0; Date.now() < until - 1500; i++) {
      const ready = await sendOnce(this.ledger, this.cluster.webUrl, 'GET', '/readyz', {
        route: 'GET readyz',
        timeoutMs: 10_000,
      });
      this.ledger.probes.push({
        fault,
        target: 'readyz',
        status: ready.status,
        retryAfter: ready.headers.get('retry-after'),
        at: Date.now(),
      });
      // In turn: a call to place, a Cal.com event and a Retell call (docs/resilience.md).
      const target = (['create-outbound-call', 'booking-webhook', 'call-webhook'] as const)[i % 3]!;
      const answered =
        target === 'create-outbound-call'
          ? await this.workload.probeCall()
          : target === 'booking-webhook'
            ? await this.workload.probeBooking()
            : await this.workload.probeRetell();
      this.ledger.probes.push({
        fault,
        target,
        status: answered.status,
        retryAfter: answered.retryAfter,
        at: Date.now(),
      });
      await sleep(400);
    }
    await sleep(until - Date.now());
  }

  private async untilReady(): Promise<number> {
    const started = Date.now();
    for (;;) {
      const ready = await sendOnce(undefined, this.cluster.webUrl, 'GET', '/readyz', {
        route: 'GET readyz',
        timeoutMs: 10_000,
      });
      if (ready.status === 200) return Date.now() - started;
      if (Date.now() - started > 120_000) return -1;
      await sleep(250);
    }
  }

  private async redisOutage(): Promise<void> {
    const started = Date.now();
    this.say(`fault: Redis stopped for ${this.plan.outageMs / 1000} s`);
    this.ledger.window = 'redis';
    await this.cluster.redisServer.stop();
    await this.probe('redis', started + this.plan.outageMs);
    await this.cluster.redisServer.start();
    // A restarted Redis has its configuration file's settings: the run's maxmemory again.
    await this.cluster.applyRedisLimit();
    this.ledger.window = null;
    const back = await this.untilReady();
    this.record('Redis stop/start', started, `ready again ${back} ms after the start`, back >= 0);
  }

  private async mongoOutage(): Promise<void> {
    const ferret = this.cluster.ferretdb!;
    const started = Date.now();
    this.say(`fault: FerretDB and PostgreSQL stopped for ${this.plan.outageMs / 1000} s`);
    this.ledger.window = 'mongodb';
    await ferret.stop();
    await this.probe('mongodb', started + this.plan.outageMs);
    await ferret.start();
    this.ledger.window = null;
    const back = await this.untilReady();
    this.ledger.mongoOutages.push({ from: started, to: Date.now() });
    this.record(
      'FerretDB+PostgreSQL stop/start',
      started,
      `ready again ${back} ms after the start`,
      back >= 0,
    );
  }
}

/** Redis used_memory in bytes, or null when it cannot be read. */
export async function usedMemory(cluster: Cluster): Promise<number | null> {
  if (cluster.redis.status !== 'ready') return null;
  let total = 0;
  // A cluster's memory is its masters' together.
  for (const node of masters(cluster.redis)) {
    const match = /used_memory:(\d+)/.exec(await node.info('memory'));
    if (!match) return null;
    total += Number(match[1]);
  }
  return total;
}
