// Redis over TLS with a certificate the platform signs itself (Heroku Redis): a real
// redis-server with only its TLS port open (`--port 0`), a CA and server certificate made with
// openssl here, and the real web and worker processes running calls through it — with the CA
// (REDIS_TLS_CA), with verification off (REDIS_TLS_REJECT_UNAUTHORIZED=false, warned about), and
// with the wrong CA or none (a start-up error naming REDIS_TLS_CA, exit code 1).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../core/platform/logger.js';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { ensureIndexes } from '../../core/platform/db/indexes.js';
import { loadConfig, ConfigError } from '../../core/platform/config.js';
import { createRedis, redisSettings } from '../../core/platform/redis.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import type { Launched } from '../../scripts/local/launcher.js';
import { TEST_COMPLIANCE_ENV, freshMongoUri, rand } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { ApiClient } from '../helpers/client.js';
import { makeCa, makeServerCert, startTlsRedis, type TestCa } from '../helpers/tls-redis.js';
import { startServiceProcess, startServiceProcesses } from '../helpers/service-processes.js';
import { callOutcomes, createCall, firmWithAgent } from '../helpers/call-load.js';

const CALLS = 5;

let dir: string;
let ca: TestCa;
let otherCa: TestCa;
let redis: { tlsPort: number; launched: Launched };
let mongo: Mongo;
let base: Record<string, string>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'redis-tls-'));
  ca = await makeCa(dir, 'platform');
  otherCa = await makeCa(dir, 'other');
  redis = await startTlsRedis(dir, ca, await makeServerCert(dir, ca));
  const mongodbUri = freshMongoUri();
  mongo = createMongo(mongodbUri, { log: createLogger('silent', 'test') });
  await ensureIndexes(mongo.db);
  base = {
    REDIS_URL: `rediss://127.0.0.1:${redis.tlsPort}`,
    MONGODB_URI: mongodbUri,
    ADMIN_API_KEY: `adm_${rand(16)}`,
    SESSION_SECRET: rand(24),
    SECRETS_KEY: 'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
    ...TEST_COMPLIANCE_ENV,
    QUEUE_PREFIX: `t${rand(4)}`,
    SIM_CALL_MS: '200',
    ALLOW_PRIVATE_URLS: 'true',
  };
});
afterAll(async () => {
  await mongo?.db.dropDatabase().catch(() => {});
  await mongo?.close();
  await redis?.launched.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Calls placed through the service over TLS, each to its end; the invariants row. */
async function callsEndToEnd(baseUrl: string) {
  const firm = await firmWithAgent(baseUrl, base.ADMIN_API_KEY!);
  const answers = [];
  for (let i = 0; i < CALLS; i++) answers.push(await createCall(firm, `tls-${rand()}`, i));
  const acknowledged = answers.filter((a) => a.status === 200).map((a) => a.callId!);
  const outcomes = await eventually(
    async () => {
      const found = await callOutcomes(mongo.db, acknowledged);
      for (const [id, o] of found) expect(o.leads, `${id} ${JSON.stringify(o)}`).toBe(1);
      return found;
    },
    60_000,
    200,
  );
  const row = {
    sent: CALLS,
    acknowledged: acknowledged.length,
    ended: [...outcomes.values()].filter((o) => o.status === 'ended').length,
    leads: [...outcomes.values()].reduce((n, o) => n + o.leads, 0),
    lost: [...outcomes.values()].filter((o) => o.leads === 0).length,
    doubled: [...outcomes.values()].filter((o) => o.leads > 1 || o.dialAttempts > 1).length,
  };
  console.log(`invariants ${JSON.stringify(row)}`);
  return { firm: firm.slug, row };
}

describe('Redis over TLS with a platform-signed certificate', () => {
  it('has no plain-text port: nothing can go around TLS', async () => {
    const settings = redisSettings(loadConfig({ ...base, REDIS_TLS_CA: ca.pem }));
    const client = createRedis(settings, 'worker');
    try {
      expect(await client.config('GET', 'port')).toEqual(['port', '0']);
      expect(await client.config('GET', 'tls-port')).toEqual(['tls-port', String(redis.tlsPort)]);
    } finally {
      client.disconnect();
    }
    // Plain text to the TLS port is no Redis conversation: the server drops it without a PONG.
    const reply = await new Promise<string>((resolve) => {
      const socket = connect(redis.tlsPort, '127.0.0.1', () => socket.write('PING\r\n'));
      let got = '';
      socket.on('data', (d) => (got += d.toString('latin1')));
      socket.on('close', () => resolve(got));
      socket.on('error', () => resolve(got));
      setTimeout(() => socket.destroy(), 3000);
    });
    expect(reply).not.toContain('PONG');
  });

  it('runs calls to their end with REDIS_TLS_CA (PEM text for the web, a file path for the worker)', async () => {
    const caFile = join(dir, 'ca-for-worker.pem');
    await writeFile(caFile, ca.pem);
    const service = await startServiceProcesses({ ...base, REDIS_TLS_CA: ca.pem }, dir, 'with-ca', {
      REDIS_TLS_CA: caFile,
    });
    try {
      const { firm, row } = await callsEndToEnd(service.baseUrl);
      expect(row).toEqual({
        sent: CALLS,
        acknowledged: CALLS,
        ended: CALLS,
        leads: CALLS,
        lost: 0,
        doubled: 0,
      });
      // The read-cache epoch went over TLS too: a firm's change moves it (the web's INCR).
      const epoch = async (): Promise<number> => {
        const client = createRedis(redisSettings(loadConfig({ ...base, REDIS_TLS_CA: ca.pem })), 'worker');
        try {
          return Number(
            await client.get(
              redisKeys({ queuePrefix: base.QUEUE_PREFIX!, redisCluster: false }).readCacheEpoch(),
            ),
          );
        } finally {
          client.disconnect();
        }
      };
      const before = await epoch();
      const admin = new ApiClient(service.baseUrl).withToken(base.ADMIN_API_KEY!);
      const patched = await admin.patch(`/api/firms/${firm}`, { name: 'Renamed over TLS' });
      expect(patched.status).toBe(200);
      expect(await epoch()).toBeGreaterThan(before);
      expect(await service.web.output()).not.toContain('REDIS_TLS_REJECT_UNAUTHORIZED');
    } finally {
      await service.stop();
    }
  }, 120_000);

  it('runs calls to their end with REDIS_TLS_REJECT_UNAUTHORIZED=false, warning at start', async () => {
    const service = await startServiceProcesses(
      { ...base, REDIS_TLS_REJECT_UNAUTHORIZED: 'false' },
      dir,
      'no-verify',
    );
    try {
      const { row } = await callsEndToEnd(service.baseUrl);
      expect(row).toEqual({
        sent: CALLS,
        acknowledged: CALLS,
        ended: CALLS,
        leads: CALLS,
        lost: 0,
        doubled: 0,
      });
      for (const child of [service.web, service.worker]) {
        const warned = (await child.output())
          .split('\n')
          .filter((line) => line.includes('REDIS_TLS_REJECT_UNAUTHORIZED=false'));
        expect(warned).toHaveLength(1);
        expect(JSON.parse(warned[0]!).level).toBe(40); // pino's warn
      }
    } finally {
      await service.stop();
    }
  }, 120_000);

  const refused = [
    {
      name: 'another CA',
      env: (): Record<string, string> => ({ REDIS_TLS_CA: otherCa.pem }),
      says: 'does not verify against REDIS_TLS_CA',
    },
    { name: 'no CA (the system CAs)', env: (): Record<string, string> => ({}), says: 'set REDIS_TLS_CA' },
  ];
  // The four refused starts share nothing (a child process each, exiting on its own): they run
  // side by side rather than one after the other.
  describe.concurrent('refused at start', () => {
    for (const entry of ['api/server.ts', 'workers/main.ts'] as const) {
      for (const { name, env, says } of refused) {
        it(`${entry} with ${name} exits 1 at start naming REDIS_TLS_CA and the TLS error`, async ({
          expect,
        }) => {
          const child = startServiceProcess(
            entry,
            { ...base, PORT: '0', ...env() },
            join(dir, `refused-${rand()}.log`),
          );
          const exit = await child.launched.exited;
          expect(exit).toEqual({ code: 1, signal: null });
          const output = await child.output();
          expect(output).toContain(says);
          expect(output).toMatch(
            /\((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|DEPTH_ZERO_SELF_SIGNED_CERT)\)/,
          );
        });
      }
    }
  });

  it('refuses a REDIS_TLS_CA that is neither PEM nor a readable PEM file, or given with redis://', async () => {
    const bad = join(dir, 'not-a-cert.txt');
    await writeFile(bad, 'hello');
    const cases: [Record<string, string>, string][] = [
      [{ REDIS_TLS_CA: join(dir, 'missing.pem') }, 'REDIS_TLS_CA is neither PEM text'],
      [{ REDIS_TLS_CA: bad }, 'REDIS_TLS_CA holds no PEM certificate'],
      [
        { REDIS_TLS_CA: '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----' },
        'REDIS_TLS_CA holds no PEM certificate',
      ],
      [
        { REDIS_TLS_CA: ca.pem, REDIS_URL: `redis://127.0.0.1:${redis.tlsPort}` },
        'REDIS_URL is not rediss://',
      ],
    ];
    for (const [env, message] of cases) {
      let thrown: unknown;
      try {
        redisSettings(loadConfig({ ...base, ...env }));
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(ConfigError);
      expect((thrown as ConfigError).problems.join()).toContain(message);
    }
    expect(() => loadConfig({ ...base, REDIS_TLS_REJECT_UNAUTHORIZED: 'no' })).toThrow(
      /REDIS_TLS_REJECT_UNAUTHORIZED/,
    );
    // An entry point reports it as a configuration error (exit 1), before connecting at all.
    const child = startServiceProcess(
      'workers/main.ts',
      { ...base, REDIS_TLS_CA: bad },
      join(dir, 'bad-ca.log'),
    );
    expect(await child.launched.exited).toEqual({ code: 1, signal: null });
    expect(await child.output()).toContain('REDIS_TLS_CA holds no PEM certificate');
  });
});
