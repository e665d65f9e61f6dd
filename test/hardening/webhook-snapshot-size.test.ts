// The call webhook's snapshot once bounded keys and depth but not size, so a 2 MB
// call_analyzed (custom_analysis_data of 100 keys × 20,000 characters, a 20,000-character summary)
// became a 2 MB job, and 25 deliveries added about 50 MB to Redis. The analysis data and the
// summary now share a 16 KiB budget; the transcript keeps its own 200,000-character cap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { snapshotProviderCall } from '../../core/domain/calls/provider-call.js';
import { jobsHeldBytes, redisUsedMemory } from '../helpers/redis-memory.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';
import { postSigned } from '../webhooks/support.js';
import { deliveredCallEvents } from '../helpers/webhook-outbox.js';

const SECRET = 'whsec_snapshot_budget_secret';

/** A call_analyzed whose analysis is as large as a 2 MB body allows (the review's shape). */
function hostileAnalyzed(callId: string) {
  const custom: Record<string, string> = { caller_name: 'Dana Reyes', caller_email: 'dana@example.com' };
  for (let i = 0; i < 100; i++)
    custom[`field_${String(i).padStart(3, '0')}`] = `${i}`.repeat(20_000).slice(0, 20_000);
  return {
    event: 'call_analyzed',
    call: {
      call_id: callId,
      call_status: 'ended',
      direction: 'inbound',
      // At its own cap: what a long honest call may carry.
      transcript: 'Agent: Hello.\nUser: '.padEnd(200_000, 'w'),
      call_analysis: {
        call_summary: 's'.repeat(20_000),
        user_sentiment: 'Neutral',
        call_successful: true,
        custom_analysis_data: custom,
      },
    },
  };
}

describe('a call webhook snapshot has a byte budget', () => {
  let stack: Stack;
  let firm: Awaited<ReturnType<typeof createFirm>>;
  beforeAll(async () => {
    // No workers: the jobs stay waiting in Redis, the most they can hold.
    stack = await startStack();
    firm = await createFirm(stack, { voice_webhook_secret: SECRET });
  });
  afterAll(async () => stack?.stop());

  it('25 hostile call_analyzed deliveries grow Redis by a bounded amount (figures logged)', async () => {
    const before = await redisUsedMemory(stack);
    const ids: string[] = [];
    for (let i = 0; i < 25; i++) {
      const body = hostileAnalyzed(`m1_${i}_${rand(4)}`);
      ids.push(body.call.call_id);
      if (i === 0) expect(JSON.stringify(body).length).toBeGreaterThan(2_000_000);
      const res = await postSigned(stack, firm.slug, SECRET, body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    }
    const after = await redisUsedMemory(stack);
    console.log(
      `[snapshot budget] Redis used_memory after 25 hostile call_analyzed deliveries: ${(before / 1e6).toFixed(2)} MB → ${(after / 1e6).toFixed(2)} MB (+${((after - before) / 1e6).toFixed(2)} MB)`,
    );
    // Each delivery is a job, or (an add slower than ENQUEUE_TIMEOUT_MS on a loaded machine) an
    // outbox entry of the same data: the snapshot's budget holds for either.
    const { jobs: mine, byCall } = await deliveredCallEvents(stack, ids);
    expect(byCall.size).toBe(25);
    for (const data of byCall.values()) {
      const analysis = data.call.call_analysis!;
      // The analysis data and the summary: 16 KiB together, whatever the body held.
      expect(
        Buffer.byteLength(JSON.stringify([analysis.call_summary, analysis.custom_analysis_data])),
      ).toBeLessThanOrEqual(16_384);
      // What the extraction reads first is kept.
      expect(analysis.custom_analysis_data).toMatchObject({
        caller_name: 'Dana Reyes',
        caller_email: 'dana@example.com',
      });
      // The transcript (200,000 characters) plus the 16 KiB, and little else.
      expect(Buffer.byteLength(JSON.stringify(data))).toBeLessThan(220_000);
    }
    // What the 25 jobs hold in Redis, key by key (used_memory above is the whole server's, which
    // the test files running beside this one change too): 25 jobs of at most 220 kB each and
    // Redis's own overhead; before the change, about 2 MB a job and 56 MB in all.
    const held = await jobsHeldBytes(stack, 'call-events', mine);
    console.log(
      `[snapshot budget] the ${mine.length} jobs' keys: ${(held / 1e6).toFixed(2)} MB` +
        (mine.length < 25 ? ` (${25 - mine.length} deliveries kept in the outbox instead)` : ''),
    );
    expect(held).toBeGreaterThanOrEqual(mine.length * 200_000);
    expect(held).toBeLessThan(8_000_000);
  }, 120_000);

  it('the same delivery always makes the same snapshot (the analysis digest is stable)', () => {
    const body = hostileAnalyzed('m1_same');
    const a = snapshotProviderCall(structuredClone(body.call));
    const b = snapshotProviderCall(structuredClone(body.call));
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    const multibyte = snapshotProviderCall({
      call_id: 'm1_utf8',
      call_analysis: {
        call_summary: '€'.repeat(20_000),
        custom_analysis_data: { note: '😀'.repeat(20_000), quote: '"\\\u0001'.repeat(10_000) },
      },
    });
    const analysis = multibyte.call_analysis!;
    expect(
      Buffer.byteLength(JSON.stringify([analysis.call_summary, analysis.custom_analysis_data])),
    ).toBeLessThanOrEqual(16_384);
    // No half of a surrogate pair is left at a cut.
    expect(JSON.stringify(analysis)).not.toMatch(/\\ud83d(?!\\ude00)/i);
    expect(analysis.custom_analysis_data.note).toMatch(/^(😀)+$/u);
  });
});
