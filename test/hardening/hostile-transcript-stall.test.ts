// Hostile transcripts, the worker side: one firm's webhooks must not stall the shared worker for every firm. Firm
// A sends call_analyzed deliveries whose transcripts are a run of characters without a space (the
// review measured 13 s of email regex per delivery of 100,000, and firm B's next call_started at
// 14.6 s after one, 49.7 s after four). The worker's CPU for such a delivery must grow linearly
// with the transcript: 100,000 characters may cost at most 30 times 10,000 (linear is at most 10,
// the quadratic pattern about 100), measured on the worker process's own main thread, so a loaded
// machine does not count (test/helpers/growth.ts). Then firm B's call_started, sent while four
// such deliveries are analysed in the same worker process, is applied, and A's calls are analysed
// (docs/webhooks.md#linear-text-scanning); how long B waited is printed, not held to a clock.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboundCallId } from '../../core/domain/calls/call-keys.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { startWorkerProcess } from '../helpers/worker-process.js';
import { describeGrowth, growthAsync, GROWTH_LIMIT, processCpuMs } from '../helpers/growth.js';
import { callsOf, postSigned, retellCallAnalyzed } from '../webhooks/support.js';

const SECRET_A = 'whsec_hostile_firm_secret';
const SECRET_B = 'whsec_other_firm_secret';
const HOSTILE_DELIVERIES = 4;

let stack: Stack;
let worker: ChildProcess | undefined;

beforeAll(async () => {
  stack = await startStack();
  // The worker is its own process, as in production: its event loop is the one A could hold.
  worker = startWorkerProcess(stack.env);
});
afterAll(async () => {
  if (worker && worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
  await stack?.stop();
});

/** A call_analyzed of a conversation whose transcript is `length` characters without a space. */
function hostileCallAnalyzed(length = 100_000) {
  const body = retellCallAnalyzed({ providerCallId: `call_${rand(12)}` });
  body.call.transcript = `User: ${'a'.repeat(length)}`;
  body.call.transcript_object = [];
  body.call.transcript_with_tool_calls = [];
  // No extracted fields: the analysis reads the transcript for every one of them.
  body.call.call_analysis = { ...body.call.call_analysis, custom_analysis_data: {}, call_summary: '' };
  return body;
}

/**
 * Not a budget: only stops a wait that would never end. The first delivery waits for the worker
 * process to start, which took over 15 s at load 14.
 */
const HANG_GUARD_MS = 120_000;

/** Delivers one of firm A's calls and waits until the worker has analysed it. */
async function analysed(firm: string, secret: string, body: ReturnType<typeof hostileCallAnalyzed>) {
  const res = await postSigned(stack, firm, secret, body);
  expect(res.status, res.text).toBe(200);
  return eventually(
    async () => {
      const stored = await callsOf(stack).findOne({ firm, provider_call_id: body.call.call_id });
      expect(stored?.extraction).toBeDefined();
      return stored!.extraction!;
    },
    HANG_GUARD_MS,
    20,
  );
}

describe('a hostile transcript does not stall the worker for other firms', () => {
  it('the worker’s CPU for a hostile call_analyzed grows linearly with its transcript (10,000 to 100,000 characters)', async () => {
    const firmA = await createFirm(stack, { voice_webhook_secret: SECRET_A });
    // A first delivery warms the worker's code up; then one at a time, each until its analysis
    // is stored: the worker's CPU meanwhile is that delivery's.
    await analysed(firmA.slug, SECRET_A, hostileCallAnalyzed(1000));
    const measured = await growthAsync(
      [100_000],
      (length) => hostileCallAnalyzed(length),
      async (body) => expect((await analysed(firmA.slug, SECRET_A, body)).email).toBeNull(),
      { meter: () => processCpuMs(worker!.pid!), tries: 3 },
    );
    console.log(`the worker's CPU for one hostile delivery: ${describeGrowth(measured)}`);
    expect(measured.ratio, describeGrowth(measured)).toBeLessThanOrEqual(GROWTH_LIMIT);
  }, 300_000);

  it('firm B’s call_started is applied while firm A’s hostile call_analyzed deliveries are analysed', async () => {
    const firmA = await createFirm(stack, { voice_webhook_secret: SECRET_A });
    const firmB = await createFirm(stack, { voice_webhook_secret: SECRET_B });

    const hostile = Array.from({ length: HOSTILE_DELIVERIES }, () => hostileCallAnalyzed());
    for (const body of hostile) {
      const res = await postSigned(stack, firmA.slug, SECRET_A, body);
      expect(res.status, res.text).toBe(200);
    }
    // A's analyses have reached the worker: one analyze-call job is running or done.
    await eventually(
      async () => {
        const counts = await stack.services.queues['call-effects'].getJobCounts('active', 'completed');
        expect((counts.active ?? 0) + (counts.completed ?? 0)).toBeGreaterThan(0);
      },
      HANG_GUARD_MS,
      20,
    );

    const providerCallId = `call_${rand(12)}`;
    const started = {
      event: 'call_started',
      call: { call_id: providerCallId, call_status: 'ongoing', direction: 'inbound', agent_id: 'agent_b' },
    };
    const delivered = await postSigned(stack, firmB.slug, SECRET_B, started);
    expect(delivered.status, delivered.text).toBe(200);
    const sentAt = Date.now();
    const callId = inboundCallId(firmB.slug, providerCallId);
    await eventually(
      async () => {
        const got = await firmB.client.get(`/api/v2/get-call/${callId}`);
        expect(got.status).toBe(200);
        expect(got.body.status).toBe('ongoing');
      },
      HANG_GUARD_MS,
      20,
    );
    console.log(
      `firm B's call_started applied ${Date.now() - sentAt} ms after its delivery, behind ${HOSTILE_DELIVERIES} hostile deliveries`,
    );

    // A's calls are analysed too: the bounded analysis reads them, finds no contact, and ends.
    for (const body of hostile) {
      const extraction = await eventually(
        async () => {
          const stored = await callsOf(stack).findOne({
            firm: firmA.slug,
            provider_call_id: body.call.call_id,
          });
          expect(stored?.extraction).toBeDefined();
          return stored!.extraction!;
        },
        HANG_GUARD_MS,
        50,
      );
      expect(extraction.email).toBeNull();
    }
    const jobs = await stack.services.queues['call-effects'].getJobs(['completed']);
    const analyses = jobs.filter((j) => j.name === 'analyze-call' && j.data.firm === firmA.slug);
    console.log(
      `firm A's analyze-call jobs took ${analyses.map((j) => `${(j.finishedOn ?? 0) - (j.processedOn ?? 0)} ms`).join(', ')}`,
    );
  }, 300_000);
});
