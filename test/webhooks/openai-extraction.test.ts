// With OPENAI_API_KEY set, the call_analyzed pipeline extracts the caller data with OpenAI
// structured output (response_format json_schema, strict) — here against a local server that
// speaks OpenAI's chat completions API — normalises it, and falls back to the deterministic
// extractor field by field, or wholly when the model cannot be used. A lead is never lost.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-server.js';
import { callForProvider, callsOf, leadsOf, postSigned, retellCallAnalyzed, settledCall } from './support.js';

const SECRET = 'whsec_openai_extraction';
let openai: FakeOpenAi;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;

beforeAll(async () => {
  openai = await startFakeOpenAi('sk-extraction-test');
  stack = await startStack({
    workers: true,
    env: { OPENAI_API_KEY: 'sk-extraction-test', OPENAI_BASE_URL: openai.url, OPENAI_MODEL: 'gpt-4o-mini' },
  });
  firm = await createFirm(stack, { voice_webhook_secret: SECRET });
});
afterAll(async () => {
  await stack?.stop();
  await openai?.close();
});
beforeEach(() => openai.reset());

async function analysed(body = retellCallAnalyzed()) {
  expect((await postSigned(stack, firm.slug, SECRET, body)).status).toBe(200);
  const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
  const call = await settledCall(firm.client, callId);
  return { call, stored: (await callsOf(stack).findOne({ _id: callId }))!, body };
}

const structuredRequests = () =>
  openai.requests.filter((r) => r.body.response_format?.type === 'json_schema');

describe('extraction with OpenAI structured output', () => {
  it('asks for the caller_data schema (strict) with the transcript and the provider data, and uses the normalised answer', async () => {
    openai.respondStructured = () => ({
      first_name: 'Janet',
      last_name: 'Ortiz',
      phone: '(415) 555-0111',
      email: ' JANET.ORTIZ@Example.com ',
      case_type: 'Employment',
      summary: 'Fired two days after reporting harassment; has the emails.',
      urgency: 'urgent',
    });
    const { call, stored, body } = await analysed();
    expect(stored.extraction).toMatchObject({ extractor: 'openai', fallback_reason: null });
    expect(call.caller_data).toEqual({
      first_name: 'Janet',
      last_name: 'Ortiz',
      phone: '+14155550111',
      email: 'janet.ortiz@example.com',
      case_type: 'Employment',
      summary: 'Fired two days after reporting harassment; has the emails.',
      urgency: 'urgent',
    });
    const lead = (await leadsOf(stack).findOne({ _id: call.lead_id }))!;
    expect(lead).toMatchObject({ first_name: 'Janet', phone: '+14155550111', urgency: 'urgent' });

    const [request] = structuredRequests();
    expect(request!.authorization).toBe('Bearer sk-extraction-test');
    expect(request!.body.model).toBe('gpt-4o-mini');
    expect(request!.body.response_format.json_schema).toMatchObject({ name: 'caller_data', strict: true });
    expect(request!.body.response_format.json_schema.schema.required.sort()).toEqual(
      ['case_type', 'email', 'first_name', 'last_name', 'phone', 'summary', 'urgency'].sort(),
    );
    const prompt = JSON.stringify(request!.body.messages);
    expect(prompt).toContain('rear-ended at a red light'); // the transcript
    expect(prompt).toContain(body.call.call_analysis!.call_summary!.slice(0, 30)); // the provider summary
  });

  it('fills what the model left null or wrote unusably from the deterministic extractor', async () => {
    openai.respondStructured = () => ({
      first_name: null,
      last_name: null,
      phone: 'call me maybe',
      email: null,
      case_type: 'Auto accident',
      summary: null,
      urgency: null,
    });
    const { call, stored, body } = await analysed();
    expect(stored.extraction?.extractor).toBe('openai');
    expect(call.caller_data).toEqual({
      first_name: 'Jane',
      last_name: "O'Neil <b>",
      phone: '+14155550142',
      email: 'jane.oneil@example.com',
      case_type: 'Auto accident',
      summary: body.call.call_analysis!.call_summary,
      urgency: 'high',
    });
  });

  it('retries the extraction with backoff while OpenAI answers 500, then uses its answer', async () => {
    openai.failNext.push(500, 500); // both tries of the first attempt (the SDK retries once)
    openai.respondStructured = () => ({
      first_name: 'Retried',
      last_name: 'Caller',
      phone: null,
      email: null,
      case_type: null,
      summary: null,
      urgency: null,
    });
    const { call, stored } = await analysed();
    expect(stored.extraction).toMatchObject({ extractor: 'openai', first_name: 'Retried' });
    expect(call.effects.lead).toBe('done');
    expect(structuredRequests().length).toBe(3);
  });

  it('a key OpenAI refuses (401): the deterministic extraction is stored with the reason, and the lead is made', async () => {
    openai.apiKey = 'sk-rotated';
    const { call, stored } = await analysed();
    expect(stored.extraction).toMatchObject({
      extractor: 'deterministic',
      fallback_reason: expect.stringContaining('401'),
      first_name: 'Jane',
      phone: '+14155550142',
    });
    expect(call.effects.lead).toBe('done');
    expect(structuredRequests().length).toBe(1);
  });
});
