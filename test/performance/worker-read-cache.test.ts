// The worker process reads firms and agents through the read cache too (core/platform/db/
// read-cache.ts): each job reads the change epoch before it runs. Here the web runs in the test
// process and the worker is the real entry as a child process. A firm and an agent patched
// through the API are seen by the very next job on the worker, and a warm call's jobs read
// neither from the database: the child's MongoDB driver logs every command it sends, and the
// test counts them. While a worker's Redis connection is lost, nothing it cached is served.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CommandStartedEvent } from 'mongodb';
import { loadConfig } from '../../core/platform/config.js';
import { enableReadCache, observeChangeEpoch } from '../../core/platform/db/read-cache.js';
import { getFirm } from '../../core/domain/firms/firms.js';
import { createLogger } from '../../core/platform/logger.js';
import { createServices } from '../../core/wiring/services.js';
import { eventually } from '../helpers/eventually.js';
import { startTcpRelay } from '../helpers/tcp-relay.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startWorkerProcess } from '../helpers/worker-process.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { createAgent, waitForCall } from '../calls/support.js';
import { QUEUE_NAMES } from '../../jobs/queues.js';

let smtp: FakeSmtp;
let stack: Stack;
let child: ChildProcess | undefined;
let dir: string;
let log: string;
let firm: Awaited<ReturnType<typeof createFirm>>;
let agentId: string;
let dialled = 0;

beforeAll(async () => {
  smtp = await startFakeSmtp();
  stack = await startStack({ env: { SMTP_URL: smtp.url, MAIL_FROM: 'intake@service.test' } });
  dir = await mkdtemp(join(tmpdir(), 'worker-read-cache-'));
  log = join(dir, 'worker.log');
  child = startWorkerProcess(
    {
      ...stack.env,
      // The driver's own log of every command it sends (its standard logging, to stderr).
      MONGODB_LOG_COMMAND: 'debug',
      MONGODB_LOG_PATH: 'stderr',
      MONGODB_LOG_MAX_DOCUMENT_LENGTH: '120',
    },
    { file: log },
  );
  // The child consumes every queue before the first call is made: under tsx it takes seconds of
  // CPU to start, tens of seconds on a loaded machine, which the call's own wait is not for.
  await eventually(
    async () => {
      for (const name of QUEUE_NAMES)
        expect((await stack.services.queues[name].getWorkers()).length).toBeGreaterThan(0);
    },
    90_000,
    200,
  );
  firm = await createFirm(stack, { notification_emails: ['before@lawfirm.test'] });
  agentId = await createAgent(firm.client, firm.slug);
  // A first call warms the worker's cache with the firm and the agent as they are now.
  const warm = await callToTheEnd();
  expect(mailsFor(warm.mailsFrom)).toEqual([['before@lawfirm.test']]);
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await stack?.stop();
  await smtp?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const SETTLED = ['done', 'skipped', 'failed'];

/** One outbound call, played by the simulator and analysed, until its four effects are settled. */
async function callToTheEnd(): Promise<{ call: any; mailsFrom: number }> {
  const mailsFrom = smtp.messages.length;
  dialled += 1;
  const created = await firm.client.post('/api/v2/create-outbound-call', {
    toNumber: `+1415555${String(dialled).padStart(4, '0')}`,
    agentId,
    firmSlug: firm.slug,
    dynamicVariables: { full_name: 'Jane Doe', email: 'jane.doe@example.com' },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const call = await waitForCall(
    firm.client,
    created.body.call_id,
    (c) =>
      ['lead', 'crm', 'email', 'team_chat'].every((e) => SETTLED.includes(c.effects?.[e])) &&
      c.effects.email === 'done',
    60_000,
  );
  return { call, mailsFrom };
}

/** The recipients of each mail received since `from`. */
const mailsFor = (from: number) => smtp.messages.slice(from).map((m) => m.to);

/** The commands the child's driver started, by "<command> <collection>", from byte `from` of its log. */
async function commandsSince(from: number): Promise<Map<string, number>> {
  const text = (await readFile(log)).subarray(from).toString('utf8');
  const out = new Map<string, number>();
  for (const m of text.matchAll(/message: 'Command started', command: '\{"(\w+)":"([^"]+)"/g)) {
    const name = `${m[1]} ${m[2]}`;
    out.set(name, (out.get(name) ?? 0) + 1);
  }
  return out;
}

describe('the worker process reads firms and agents through the read cache', () => {
  it("a warm call's jobs read no firm or agent from the database", async () => {
    const from = (await readFile(log)).length;
    await callToTheEnd();
    const commands = await commandsSince(from);
    // The log counts: the call's own documents were read.
    expect(commands.get('find calls') ?? 0).toBeGreaterThan(0);
    expect([commands.get('find firms') ?? 0, commands.get('find agents') ?? 0]).toEqual([0, 0]);
  });

  it('a firm and an agent patched through the API are seen by the very next job on the worker', async () => {
    const patched = await stack.admin.patch(`/api/firms/${firm.slug}`, {
      settings: { notification_emails: ['after@lawfirm.test'] },
    });
    expect(patched.status).toBe(200);
    const greeting = 'Good morning, you have reached the new intake line.';
    const agent = await firm.client.patch(`/api/v2/update-agent/${agentId}`, { begin_message: greeting });
    expect(agent.status).toBe(200);
    const { call, mailsFrom } = await callToTheEnd();
    // The dial's job read the agent afresh (the simulator plays its greeting), the email's job the firm.
    expect({
      greeting: (call.transcript as string).includes(`Agent: ${greeting}`),
      mailedTo: mailsFor(mailsFrom),
    }).toEqual({ greeting: true, mailedTo: [['after@lawfirm.test']] });
  });
});

describe("a worker's read cache while its Redis connection is lost", () => {
  it('serves nothing it read before: a running job reads from the database, and a new one does not wait', async () => {
    // A worker's services (in this process) whose Redis connection goes through a relay we cut.
    const relay = await startTcpRelay(new URL(stack.env.REDIS_URL!));
    const uri = new URL(stack.env.MONGODB_URI!);
    uri.searchParams.set('monitorCommands', 'true');
    const config = loadConfig({
      ...stack.env,
      REDIS_URL: relay.via(stack.env.REDIS_URL!),
      MONGODB_URI: uri.toString(),
    });
    const services = createServices(config, createLogger('silent', 'test'), 'worker');
    const db = services.mongo.db;
    enableReadCache(db);
    let firmReads = 0;
    services.mongo.client.on('commandStarted', (e: CommandStartedEvent) => {
      if (e.commandName === 'find' && (e.command as { find: string }).find === 'firms') firmReads += 1;
    });
    const readTwice = async () => {
      expect((await getFirm(db, firm.slug))?._id).toBe(firm.slug);
      expect((await getFirm(db, firm.slug))?._id).toBe(firm.slug);
    };
    try {
      await eventually(async () => expect(services.redis.status).toBe('ready'), 10_000, 20);
      await observeChangeEpoch(db); // a job starts
      await readTwice();
      expect(firmReads).toBe(1);
      await relay.close(); // the connection is lost while the job runs
      await eventually(async () => expect(services.redis.status).not.toBe('ready'), 10_000, 20);
      await readTwice();
      expect(firmReads).toBe(3);
      await observeChangeEpoch(db); // another job starts: the epoch cannot be read
      await readTwice();
      expect(firmReads).toBe(5);
    } finally {
      services.redis.disconnect();
      await services.close();
    }
  });
});
