// Traces (OTEL_EXPORTER_OTLP_ENDPOINT): the real web and worker entries as child processes,
// exporting to a receiver in this test. One create-outbound-call through the simulator to its
// call_analyzed effects must be ONE trace: the web's request, the job it added, the worker's
// processing, the simulator's webhook back into the web, and the effects' outgoing calls.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { eventually } from '../helpers/eventually.js';
import { ApiClient } from '../helpers/client.js';
import { startWebProcess } from '../helpers/web-process.js';
import { exitOf, startWorkerProcess } from '../helpers/worker-process.js';
import {
  ancestorsOf,
  drawTrace,
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from '../helpers/otlp-receiver.js';
import { freePort } from '../../scripts/local/ports.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { startFakeClio, type FakeClio } from '../fakes/clio-server.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { createAgent } from '../calls/support.js';
import { QUEUE_NAMES } from '../../jobs/queues.js';

const INTERNAL = 1;
const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;
const PHONE = '+14155550123';

let receiver: OtlpReceiver;
let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;
let web: Awaited<ReturnType<typeof startWebProcess>> | undefined;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  [smtp, clio, slack] = await Promise.all([startFakeSmtp(), startFakeClio(), startFakeSlack()]);
  // The in-process stack only makes the database, the firm and its key: no workers of its own.
  stack = await startStack({ env: { SMTP_URL: smtp.url, SIM_CALL_MS: '200' } });
});
afterAll(async () => {
  await web?.stop();
  if (worker !== undefined && worker.exitCode === null) {
    worker.kill('SIGKILL');
    await exitOf(worker);
  }
  await stack?.stop();
  await Promise.all([smtp?.stop(), clio?.close(), slack?.close(), receiver?.close()]);
});

const named = (spans: ReceivedSpan[], kind: number, name: string, service: string): ReceivedSpan[] =>
  spans.filter((s) => s.kind === kind && s.name === name && s.service === service);

const isUnder = (span: ReceivedSpan, ancestor: ReceivedSpan, spans: ReceivedSpan[]): boolean =>
  ancestorsOf(span, spans).some((a) => a.spanId === ancestor.spanId);

describe('a traced create-outbound-call', () => {
  it('is one trace from the request through its jobs, the simulator webhook and the effects', async () => {
    const port = await freePort();
    const env = {
      ...stack.env,
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    };
    // Both start at once; loading the SDK and its instrumentations adds seconds on a busy machine.
    worker = startWorkerProcess(env);
    web = await startWebProcess(env, { port, readyTimeoutMs: 90_000 });
    // The child worker consumes every queue before the request is made (it is the only one).
    await eventually(
      async () => {
        for (const name of QUEUE_NAMES)
          expect((await stack.services.queues[name].getWorkers()).length).toBe(1);
      },
      60_000,
      200,
    );

    const slackUrl = slack.webhookUrl();
    const firm = await createFirm(stack, {
      notification_emails: ['intake@trace-law.test'],
      slack_webhook_url: slackUrl,
      crm: { provider: 'clio', access_token: clio.token, base_url: clio.url },
    });
    const agentId = await createAgent(firm.client, firm.slug);
    // The traced request goes to the child web process.
    const client = new ApiClient(web.baseUrl).withToken(firm.key);
    const created = await client.post('/api/v2/create-outbound-call?trace_probe=secret-query-value', {
      toNumber: PHONE,
      agentId,
      firmSlug: firm.slug,
      dynamicVariables: { full_name: 'Maria Lopez', email: 'maria.lopez@example.com' },
    });
    expect(created.status).toBe(200);
    const callId = created.body.call_id as string;
    // The whole chain runs through the two children, each slowed by the SDK's instrumentation: a
    // dial, the simulator's three webhooks back into the web, their jobs, the analysis and four
    // effects. Tens of seconds on a loaded machine; the wait only stops a hang.
    await eventually(
      async () => {
        const read = (await client.get(`/api/v2/get-call/${callId}`)).body;
        expect(read.effects).toEqual({ lead: 'done', crm: 'done', email: 'done', team_chat: 'done' });
      },
      90_000,
      200,
    );

    // SIGTERM: each process sends the spans it still buffers as it stops (the batch delay is
    // the SDK's default 5 s, so the last spans arrive only through that flush).
    worker.kill('SIGTERM');
    const exited = await exitOf(worker);
    expect(exited.code).toBe(0);
    const webExit = await web.stop();
    web = undefined;
    expect(webExit.code, 'the web process stops by itself, having sent its spans').toBe(0);

    expect(receiver.contentTypes.every((t) => t.startsWith('application/json'))).toBe(true);
    const spans = receiver.spans;
    const post = spans.find(
      (s) =>
        s.kind === SERVER &&
        s.service === 'intake-web' &&
        String(s.attributes['url.path'] ?? s.attributes['http.target']).startsWith(
          '/api/v2/create-outbound-call',
        ),
    );
    expect(post, 'the web server span of create-outbound-call').toBeDefined();
    const trace = spans.filter((s) => s.traceId === post!.traceId);
    console.log(
      `trace ${post!.traceId} (${trace.length} spans):\n` +
        drawTrace(trace, ['url.path', 'url.full', 'intake.firm', 'intake.call_id']),
    );

    // Web: the request's span is an ancestor of the calls queue's add span.
    const addCall = named(trace, PRODUCER, 'add calls.place-call', 'intake-web');
    expect(addCall.length).toBe(1);
    expect(isUnder(addCall[0]!, post!, trace)).toBe(true);
    // Worker: its processing is the add span's child, and parents its MongoDB and Redis spans.
    const placeCall = trace.find((s) => s.kind === CONSUMER && s.parentSpanId === addCall[0]!.spanId);
    expect(placeCall?.service).toBe('intake-worker');
    expect(placeCall?.attributes).toMatchObject({ 'intake.firm': firm.slug, 'intake.call_id': callId });
    const under = (parent: ReceivedSpan) => trace.filter((s) => isUnder(s, parent, trace));
    expect(
      under(placeCall!).some(
        (s) => s.attributes['db.system'] === 'mongodb' || s.attributes['db.system.name'] === 'mongodb',
      ),
    ).toBe(true);
    expect(
      under(placeCall!).some(
        (s) => s.attributes['db.system'] === 'redis' || s.attributes['db.system.name'] === 'redis',
      ),
    ).toBe(true);

    // The simulator's webhook: a client span in the worker, whose child is the web's handling
    // of POST /api/v2/{firm}/webhook, which adds the call-event job.
    // The path as the span keeps it: a segment that looks like an id (a slug of digits after its
    // prefix, as `firm-26218107`) is shortened there (`firm-…8107`), so the route is matched.
    const webhookPosts = trace.filter(
      (s) =>
        s.kind === SERVER &&
        s.service === 'intake-web' &&
        /^\/api\/v2\/[^/]+\/webhook$/.test(String(s.attributes['url.path'] ?? s.attributes['http.target'])),
    );
    const anyWebhookPost = spans.filter(
      (s) =>
        s.kind === SERVER &&
        String(s.attributes['url.path'] ?? s.attributes['http.target']).endsWith('/webhook'),
    );
    expect(
      webhookPosts.length,
      `webhook server spans in this trace (in any trace: ${anyWebhookPost.length} of ${spans.length} spans)`,
    ).toBeGreaterThanOrEqual(3); // call_started, call_ended, call_analyzed
    for (const handled of webhookPosts) {
      const parent = trace.find((s) => s.spanId === handled.parentSpanId);
      expect(parent).toMatchObject({ kind: CLIENT, service: 'intake-worker' });
      expect(isUnder(handled, placeCall!, trace)).toBe(true);
    }
    // ... and the call_analyzed effects, each a span of its own in the analysis job processed
    // under that chain, call out: Clio and Slack as HTTP client spans (SMTP is not HTTP).
    const analysis = trace.filter((s) => s.kind === CONSUMER && s.name === 'process call-effects');
    expect(analysis.length).toBeGreaterThanOrEqual(1);
    const effects = trace.filter((s) => s.kind === INTERNAL && s.name.startsWith('call effect '));
    expect(effects.map((s) => s.name).sort()).toEqual([
      'call effect crm',
      'call effect email',
      'call effect lead',
      'call effect team_chat',
    ]);
    for (const effect of effects) {
      expect(analysis.some((job) => isUnder(effect, job, trace))).toBe(true);
      expect(webhookPosts.some((handled) => isUnder(effect, handled, trace))).toBe(true);
      expect(effect.attributes).toMatchObject({ 'intake.firm': firm.slug, 'intake.call_id': callId });
    }
    const hostsUnder = (name: string) =>
      under(effects.find((e) => e.name === name)!)
        .filter((s) => s.kind === CLIENT)
        .map((s) => String(s.attributes['url.full'] ?? s.attributes['http.url']));
    expect(hostsUnder('call effect crm').some((u) => u.startsWith(clio.url))).toBe(true);
    expect(hostsUnder('call effect team_chat').some((u) => u.startsWith(new URL(slackUrl).origin))).toBe(
      true,
    );

    // Nothing exported names the phone in full, a secret, a token or a query string.
    const raw = receiver.bodies.join('\n');
    for (const secret of [
      PHONE,
      PHONE.slice(2),
      firm.key,
      stack.config.adminApiKey,
      stack.config.sessionSecret,
      clio.token,
      new URL(slackUrl).pathname.split('/').pop()!,
      'secret-query-value',
      'maria.lopez@example.com',
    ]) {
      expect(raw.includes(secret), `exported spans contain ${secret}`).toBe(false);
    }
    expect(raw).not.toMatch(/authorization|bearer/i);
  }, 360_000);
});
