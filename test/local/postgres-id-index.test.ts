// The PostgreSQL cluster that npm start, npm test, the benchmarks and the chaos run give FerretDB
// indexes every table FerretDB creates on `_jsonb->'_id'` with GIN (FerretDB's point reads are
// containment queries its own btree cannot serve), and without GIN's pending list: a lookup
// would otherwise scan every entry inserted since the last vacuum (docs/operations.md). Read from
// a cluster this test starts, with a table made as FerretDB makes one.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensurePostgres, startPostgres, type LocalPostgres } from '../../scripts/local/postgres.js';

const sh = promisify(execFile);
let dir: string;
let postgres: LocalPostgres | undefined;
let psqlPath: string;

const sql = async (query: string): Promise<string> =>
  (
    await sh(psqlPath, [postgres!.url, '--no-psqlrc', '-At', '-v', 'ON_ERROR_STOP=1', '-c', query])
  ).stdout.trim();

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'postgres-id-index-'));
  const bin = await ensurePostgres(() => {});
  psqlPath = join(bin, 'psql');
  await mkdir(join(dir, 'pg'));
  postgres = await startPostgres(bin, join(dir, 'pg'));
  await sql('CREATE SCHEMA app; CREATE TABLE app.calls_1a2b (_jsonb jsonb)');
}, 60_000);

afterAll(async () => {
  await postgres?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("the local cluster's index for FerretDB's point reads", () => {
  it('gives a new FerretDB table a GIN index on _jsonb->_id with no pending list', async () => {
    const indexes = await sql(
      `SELECT am.amname || ' ' || pg_get_expr(i.indexprs, i.indrelid) || ' ' || coalesce(array_to_string(c.reloptions, ','), '-')
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
        WHERE i.indrelid = 'app.calls_1a2b'::regclass`,
    );
    expect(indexes).toBe("gin (_jsonb -> '_id'::text) fastupdate=off");
  });

  it("serves FerretDB's containment form of {_id: v} from that index", async () => {
    await sql(
      `INSERT INTO app.calls_1a2b SELECT jsonb_build_object('_id', 'call_' || n, 'n', n) FROM generate_series(1, 2000) n; ANALYZE app.calls_1a2b`,
    );
    const plan = await sql(
      `EXPLAIN (COSTS OFF) SELECT _jsonb FROM app.calls_1a2b WHERE _jsonb->'_id' @> '"call_1234"'`,
    );
    expect(plan).toMatch(/Bitmap Index Scan on calls_1a2b_expr_idx/);
    expect(await sql(`SELECT _jsonb->>'n' FROM app.calls_1a2b WHERE _jsonb->'_id' @> '"call_1234"'`)).toBe(
      '1234',
    );
  });
});
