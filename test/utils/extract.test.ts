// POST /api/utils/extract (docs/extract.md) through the real HTTP route: the pipeline's
// extractor with OpenAI structured output configured (the local OpenAI), the deterministic
// answer where the model has none; `fields`; the 50,000-character bound; firm scoping; and
// adversarial text answered in time linear in its length, round trip included: 10 times the
// characters at most 30 times the cost (test/helpers/growth.ts), not a clock budget.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai-server.js';
import { expectError } from '../helpers/expect-error.js';
import { describeGrowth, growthAsync, GROWTH_LIMIT } from '../helpers/growth.js';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';

let openai: FakeOpenAi;
let stack: Stack;

beforeAll(async () => {
  openai = await startFakeOpenAi('sk-extract-test');
  stack = await startStack({
    env: { OPENAI_API_KEY: 'sk-extract-test', OPENAI_BASE_URL: openai.url, OPENAI_MODEL: 'gpt-4o-mini' },
  });
});
afterAll(async () => {
  await stack?.stop();
  await openai?.close();
});

const NOTE = [
  'Voicemail note, 9:40: My name is Jane Doe. I was rear-ended in a car accident on the highway last Tuesday;',
  'call me back at (415) 555-0123 or Jane.Doe@Example.com. It is urgent.',
].join(' ');

describe('POST /api/utils/extract', () => {
  it('answers every key: the model where its answer normalises, the deterministic extractor elsewhere', async () => {
    const firm = await createFirm(stack);
    openai.reset();
    // The model reads a case type and a corrected phone; it has no email and no name.
    openai.respondStructured = () => ({
      first_name: null,
      last_name: null,
      phone: '415-555-0199',
      email: null,
      case_type: 'Auto Accident',
      summary: 'Jane Doe was rear-ended and wants a call back.',
      urgency: 'urgent',
    });
    const res = await firm.client.post('/api/utils/extract', { firmSlug: firm.slug, text: NOTE });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({
      name: 'Jane Doe',
      first_name: 'Jane',
      last_name: 'Doe',
      phone: '+14155550199',
      email: 'jane.doe@example.com',
      case_type: 'Auto Accident',
      urgency: 'urgent',
      summary: 'Jane Doe was rear-ended and wants a call back.',
    });
    // The model was asked with structured output over the text itself.
    const asked = openai.requests.at(-1)!;
    expect(asked.body.response_format.type).toBe('json_schema');
    expect(JSON.stringify(asked.body.messages)).toContain('rear-ended in a car accident');
  });

  it('falls back to the deterministic extractor when the model fails', async () => {
    const firm = await createFirm(stack);
    openai.reset();
    openai.failAlways = 400;
    const res = await firm.client.post('/api/utils/extract', { text: NOTE });
    openai.failAlways = null;
    expect(openai.requests.length).toBeGreaterThan(0);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'Jane Doe',
      phone: '+14155550123',
      email: 'jane.doe@example.com',
      case_type: 'Personal Injury',
      urgency: 'high',
    });
  });

  it('fields: only the keys asked for; an unknown one, a repeat or an empty list is 400', async () => {
    const firm = await createFirm(stack);
    openai.reset();
    const res = await firm.client.post('/api/utils/extract', { text: NOTE, fields: ['email', 'name'] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ name: 'Jane Doe', email: 'jane.doe@example.com' });
    for (const fields of [['email', 'address'], ['email', 'email'], [], 'email', [{ $ne: 1 }]]) {
      const details = expectError(
        await firm.client.post('/api/utils/extract', { text: NOTE, fields }),
        400,
        'invalid_request',
      );
      expect(details.map((d) => d.path.split('/')[1])).toContain('fields');
    }
  });

  it('bad bodies: no text, an empty text, over 50,000 characters, an unknown field, not a string: 400', async () => {
    const firm = await createFirm(stack);
    const cases: Array<[unknown, string]> = [
      [{}, '/text'],
      [{ text: '' }, '/text'],
      [{ text: 'a'.repeat(50_001) }, '/text'],
      [{ text: { $ne: null } }, '/text'],
      [{ text: NOTE, extra: true }, '/extra'],
      [{ text: NOTE, firmSlug: 'Not A Slug' }, '/firmSlug'],
    ];
    for (const [body, path] of cases) {
      const details = expectError(await firm.client.post('/api/utils/extract', body), 400, 'invalid_request');
      expect(details.map((d) => d.path)).toContain(path);
    }
    // 50,000 characters exactly is taken.
    expect((await firm.client.post('/api/utils/extract', { text: 'b'.repeat(50_000) })).status).toBe(200);
  });

  it('is firm-scoped: the platform key names the firm, another firm is 403, an unknown one 404, no token 401', async () => {
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    expectError(await stack.admin.post('/api/utils/extract', { text: NOTE }), 400, 'invalid_request');
    expect((await stack.admin.post('/api/utils/extract', { text: NOTE, firmSlug: firm.slug })).status).toBe(
      200,
    );
    expectError(
      await other.client.post('/api/utils/extract', { text: NOTE, firmSlug: firm.slug }),
      403,
      'forbidden',
    );
    expectError(
      await stack.admin.post('/api/utils/extract', { text: NOTE, firmSlug: 'no-such-firm' }),
      404,
      'firm_not_found',
    );
    expectError(await stack.api.post('/api/utils/extract', { text: NOTE }), 401, 'unauthorized');
  });

  it('answers adversarial text of 500, 5,000 and 50,000 characters at a cost linear in its length, round trip included', async () => {
    const firm = await createFirm(stack);
    openai.reset();
    // '9': a run of what both an email's local part and a phone number are made of.
    for (const unit of ['9', '1 ', '(415) 555-01', 'my name is ', 'a@a.', 'User: ', '+1 4']) {
      const measured = await growthAsync(
        [5_000, 50_000],
        (length) => unit.repeat(Math.ceil(length / unit.length)).slice(0, length),
        async (text) => {
          const res = await firm.client.post('/api/utils/extract', { text });
          expect(res.status).toBe(200);
        },
      );
      console.log(`extract over HTTP: ${JSON.stringify(unit)}: ${describeGrowth(measured)}`);
      expect(measured.ratio, describeGrowth(measured)).toBeLessThanOrEqual(GROWTH_LIMIT);
    }
  }, 120_000);
});
