// A firm's OpenAI budget: characters sent to the model per UTC day, a firm setting
// (openai_daily_char_budget) with the platform's default (OPENAI_DAILY_CHARS_PER_FIRM). Every
// extraction counts its prompt against the firm's budget before the request is made; one that
// would pass it is not made, and the deterministic extractor answers instead — for
// POST /api/utils/extract and for the call_analyzed pipeline alike. The spend and the refusals
// are in /metrics per firm, for the platform's eyes only. Twenty extracts used to be twenty
// OpenAI calls, whatever their size.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-server.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import {
  callForProvider,
  callsOf,
  postSigned,
  retellCallAnalyzed,
  settledCall,
} from '../webhooks/support.js';

const BUDGET = 20_000;
const SECRET = 'whsec_openai_budget';
let openai: FakeOpenAi;
let stack: Stack;

beforeAll(async () => {
  openai = await startFakeOpenAi('sk-budget-test');
  stack = await startStack({
    workers: true,
    env: {
      OPENAI_API_KEY: 'sk-budget-test',
      OPENAI_BASE_URL: openai.url,
      OPENAI_MODEL: 'gpt-4o-mini',
      OPENAI_DAILY_CHARS_PER_FIRM: String(BUDGET),
    },
  });
  openai.respondStructured = () => ({
    first_name: null,
    last_name: null,
    phone: null,
    email: null,
    case_type: 'Said By The Model',
    summary: null,
    urgency: null,
  });
});
afterAll(async () => {
  await stack?.stop();
  await openai?.close();
});

/** About 7,300 characters: with the prompt around it, three of them pass 20,000. */
const NOTE = `My name is Jane Doe, call me at (415) 555-0123. ${'I was rear-ended on the highway. '.repeat(220)}`;

const structured = () => openai.requests.filter((r) => r.body.response_format?.type === 'json_schema').length;

/** A series of /metrics as the platform sees it (the series per firm are the platform's only). */
async function metric(name: string, firm: string): Promise<number | null> {
  const text = (await stack.admin.get('/metrics')).text as string;
  const line = text.split('\n').find((l) => l.startsWith(`${name}{firm="${firm}"}`));
  return line === undefined ? null : Number(line.split(' ').at(-1));
}

describe("a firm's daily OpenAI budget", () => {
  it('POST /api/utils/extract: past the budget no request is made and the deterministic answer comes back; another firm has its own', async () => {
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const before = structured();
    const answers = [];
    for (let i = 0; i < 5; i++) {
      const res = await firm.client.post('/api/utils/extract', { firmSlug: firm.slug, text: NOTE });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      answers.push(res.body);
    }
    // Two fit in 20,000 characters; the other three were never sent.
    expect(structured() - before).toBe(2);
    expect(answers.map((a) => a.case_type === 'Said By The Model')).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
    // The deterministic extractor still answers in full.
    expect(answers[4]).toMatchObject({ name: 'Jane Doe', phone: '+14155550123' });

    const res = await other.client.post('/api/utils/extract', { firmSlug: other.slug, text: NOTE });
    expect(res.body.case_type).toBe('Said By The Model');
    expect(structured() - before).toBe(3);

    const spent = await metric('openai_chars_today', firm.slug);
    expect(spent).toBeGreaterThan(2 * NOTE.length);
    expect(spent).toBeLessThanOrEqual(BUDGET);
    expect(await metric('openai_budget_fallbacks_today', firm.slug)).toBe(3);
    expect(await metric('openai_budget_fallbacks_today', other.slug)).toBe(0);
    // Without a token (or with a firm's key) /metrics names no firm: slugs are not enumerable.
    for (const client of [stack.api, firm.client]) {
      const seen = await client.get('/metrics');
      expect(seen.status).toBe(200);
      expect(seen.text).toContain('http_request_duration_seconds');
      expect(seen.text).not.toContain('openai_chars_today');
      expect(seen.text).not.toContain(firm.slug);
    }
  });

  it("a firm's own setting lowers its budget; only the platform may raise it above the default", async () => {
    const firm = await createFirm(stack, { openai_daily_char_budget: 1000 });
    const before = structured();
    const res = await firm.client.post('/api/utils/extract', { firmSlug: firm.slug, text: NOTE });
    expect(res.body).toMatchObject({ name: 'Jane Doe' });
    expect(res.body.case_type).not.toBe('Said By The Model');
    expect(structured()).toBe(before);

    const raise = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { openai_daily_char_budget: BUDGET * 10 },
    });
    expectError(raise, 403, 'forbidden');
    const lower = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { openai_daily_char_budget: 500 },
    });
    expect(lower.status).toBe(200);
    const platform = await stack.admin.patch(`/api/firms/${firm.slug}`, {
      settings: { openai_daily_char_budget: BUDGET * 10 },
    });
    expect(platform.status).toBe(200);
  });

  it('the call_analyzed pipeline: a firm past its budget gets the deterministic extraction, with the reason', async () => {
    const firm = await createFirm(stack, { voice_webhook_secret: SECRET, openai_daily_char_budget: 100 });
    const before = structured();
    const body = retellCallAnalyzed();
    expect((await postSigned(stack, firm.slug, SECRET, body)).status).toBe(200);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    await settledCall(firm.client, callId);
    const stored = (await callsOf(stack).findOne({ _id: callId }))!;
    expect(stored.extraction).toMatchObject({ extractor: 'deterministic' });
    expect(stored.extraction!.fallback_reason).toMatch(/budget/i);
    expect(structured()).toBe(before);
    expect(await metric('openai_budget_fallbacks_today', firm.slug)).toBe(1);
  });
});
