// What one list-calls page reads, with 1,000 and with 20,000 calls in the firm (both firms in one
// calls collection, ~3 KB transcripts): PostgreSQL's own counters for FerretDB's calls table
// (rows read by sequential scans and fetched through indexes, per page), Redis's time per
// ZREVRANGEBYLEX, the plan of a point read by _id, and the in-process time of a page (the first,
// and one 10,000 calls deep) beside the query list-calls ran before its index. The web stack is
// left out: this is the query pattern alone.
//   npx tsx bench/list-calls-reads.ts   (BENCH_LIST_SMALL=1000, BENCH_LIST_LARGE=20000,
//                                        BENCH_LIST_PAGE=20, BENCH_REQUESTS=30)
// Not part of `npm test`. Starts its own PostgreSQL, FerretDB and Redis (the local ones, as
// `npm test` does), and stops them at the end.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../core/platform/config.js';
import { createLogger } from '../core/platform/logger.js';
import { createServices } from '../core/wiring/services.js';
import { ensureIndexes } from '../core/platform/db/indexes.js';
import { COLLECTIONS } from '../core/platform/db/collections.js';
import { DEFAULT_SETTINGS } from '../core/domain/firms/firm-settings.js';
import type { FirmDoc } from '../core/domain/firms/firms.js';
import type { AgentDoc } from '../core/domain/agents/agents.js';
import { callsCollection } from '../core/domain/calls/calls.js';
import { listFinishedCalls } from '../core/domain/calls/calls-list.js';
import { ensureFerretDb, ensurePostgres, startLocalServices } from '../scripts/local/services.js';
import { startPostgres } from '../scripts/local/postgres.js';
import { startFerretDb } from '../scripts/local/ferretdb.js';
import { freshEnvironment, rand } from './lib/stack.js';
import { knob, loadAverage, loop } from './lib/measure.js';
import { seedEndedCalls } from './lib/seed.js';

const SMALL = knob('BENCH_LIST_SMALL', 1000, 100_000);
const LARGE = knob('BENCH_LIST_LARGE', 20_000, 200_000);
const PAGE = knob('BENCH_LIST_PAGE', 20, 1000);
const REQUESTS = knob('BENCH_REQUESTS', 30, 5000);
const sh = promisify(execFile);
const say = (line: string): void => void process.stderr.write(`[list-calls-reads] ${line}\n`);

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'list-calls-reads-'));
  const stops: Array<() => Promise<unknown>> = [() => rm(dir, { recursive: true, force: true })];
  try {
    const postgres = await startPostgres(await ensurePostgres(say), dir);
    stops.unshift(() => postgres.stop());
    const ferret = await startFerretDb(await ensureFerretDb(say), dir, postgres.url);
    stops.unshift(() => ferret.stop());
    const local = await startLocalServices({ mongodbUri: `mongodb://127.0.0.1:${ferret.port}/` }, say);
    stops.unshift(() => local.stop());
    const { env } = freshEnvironment(local, 'list-calls-reads');
    const config = loadConfig(env);
    const services = createServices(config, createLogger('warn', 'bench'), 'producer');
    stops.unshift(() => services.close());
    const db = services.mongo.db;
    await ensureIndexes(db);
    const sql = async (query: string): Promise<string> =>
      (await sh('psql', [postgres.url, '-At', '-F', ' ', '-c', query])).stdout.trim();
    const table = await sql(
      `SELECT _jsonb->>'table' FROM "${db.databaseName}"._ferretdb_database_metadata WHERE _jsonb->>'_id' = '${COLLECTIONS.calls}'`,
    );

    const agent = { _id: 'agent_bench' } as AgentDoc;
    const firms: Array<{ firm: FirmDoc; size: number }> = [];
    for (const size of [SMALL, LARGE]) {
      const firm: FirmDoc = {
        _id: `reads-${size}-${rand()}`,
        name: 'Bench firm',
        settings: DEFAULT_SETTINGS,
        created_at: new Date(),
        updated_at: new Date(),
      };
      await db.collection<FirmDoc>(COLLECTIONS.firms).insertOne(firm);
      const t = performance.now();
      await seedEndedCalls(db, firm, agent, size);
      say(`seeded ${size} calls in ${((performance.now() - t) / 1000).toFixed(1)} s`);
      firms.push({ firm, size });
    }
    say(
      `calls table "${db.databaseName}"."${table}": ${await sql(`SELECT count(*) FROM "${db.databaseName}"."${table}"`)} rows`,
    );

    /** PostgreSQL's counters of the calls table: [seq_scan, seq_tup_read, idx_scan, idx_tup_fetch]. */
    const counters = async (): Promise<number[]> => {
      // An idle backend reports its counters within PostgreSQL's 10-second idle interval.
      await new Promise((r) => setTimeout(r, 11_000));
      const row = await sql(
        `SELECT seq_scan, seq_tup_read, coalesce(idx_scan, 0), coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables WHERE schemaname = '${db.databaseName}' AND relname = '${table}'`,
      );
      return row.split(' ').map(Number);
    };
    const zrangeStats = async (): Promise<{ calls: number; usec: number }> => {
      const info = await services.redis.info('commandstats');
      const m = /cmdstat_zrevrangebylex:calls=(\d+),usec=(\d+)/.exec(info);
      return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
    };
    /** Rows read per call of `op` (`n` calls), by PostgreSQL's counters. */
    const readsPer = async (n: number, op: () => Promise<unknown>) => {
      const before = await counters();
      for (let k = 0; k < n; k++) await op();
      const after = await counters();
      const d = after.map((x, i) => (x - before[i]!) / n);
      return { seqScans: d[0]!, seqRows: d[1]!, idxScans: d[2]!, idxRows: d[3]! };
    };

    const lines: string[] = [];
    for (const { firm, size } of firms) {
      const t = performance.now();
      await listFinishedCalls(services, firm._id, PAGE, undefined);
      const rebuildMs = performance.now() - t;
      const page = () => listFinishedCalls(services, firm._id, PAGE, undefined);
      // A cursor about 10,000 calls deep (or half way, in a smaller firm).
      const deepAt = Math.min(10_000, Math.floor(size / 2));
      const deepCursor = (await listFinishedCalls(services, firm._id, deepAt, undefined)).next_cursor;
      const deep = () => listFinishedCalls(services, firm._id, PAGE, deepCursor);
      const former = () =>
        callsCollection(db)
          .find({ firm: firm._id, finished: true })
          .sort({ end_timestamp: -1, call_id: -1 })
          .limit(PAGE + 1)
          .toArray();
      await loop(1, 3, page);
      const z0 = await zrangeStats();
      const firstMs = (await loop(1, REQUESTS, page)).p50;
      const z1 = await zrangeStats();
      const deepMs = (await loop(1, REQUESTS, deep)).p50;
      const formerMs = (await loop(1, 3, former)).p50;
      const newReads = await readsPer(5, page);
      const oldReads = await readsPer(2, former);
      lines.push(
        `${String(size).padStart(6)} calls | index built in ${rebuildMs.toFixed(0)} ms | ` +
          `page p50 ${firstMs.toFixed(1)} ms, ${deepAt} deep ${deepMs.toFixed(1)} ms | ` +
          `ZREVRANGEBYLEX ${((z1.usec - z0.usec) / Math.max(1, z1.calls - z0.calls)).toFixed(1)} µs | ` +
          `PostgreSQL per page: ${newReads.seqScans} seq scans reading ${newReads.seqRows} rows, ${newReads.idxScans} index scans fetching ${newReads.idxRows} rows | ` +
          `former query p50 ${formerMs.toFixed(0)} ms, per page ${oldReads.seqScans} seq scans reading ${oldReads.seqRows} rows, ${oldReads.idxRows} by index`,
      );
    }
    const someId = (await callsCollection(db).findOne(
      { firm: firms[1]!.firm._id },
      { projection: { _id: 1 } },
    ))!._id;
    const plan = await sql(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT _jsonb FROM "${db.databaseName}"."${table}" WHERE _jsonb->'_id' @> '"${someId}"'`,
    );
    process.stdout.write(
      [
        `load average ${loadAverage()}; page of ${PAGE}`,
        ...lines,
        '',
        'A point read by _id, as FerretDB sends it:',
        plan,
        '',
      ].join('\n'),
    );
    await db.dropDatabase();
  } finally {
    for (const stop of stops) await stop().catch(() => undefined);
  }
}

await main();
