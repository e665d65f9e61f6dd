// The fake Slack refuses what Slack's incoming webhooks refuse, with Slack's status and word:
// a body that is not a JSON object (400 invalid_payload), a message with neither text nor
// blocks (400 no_text), blocks that are not an array (400 invalid_blocks_format), blocks off Block Kit's published limits (400 invalid_blocks), an
// unknown webhook path (404 no_service); and takes a message within them (200 ok).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from './slack-server.js';

let slack: FakeSlack;
beforeAll(async () => {
  slack = await startFakeSlack();
});
afterAll(async () => {
  await slack?.close();
});

async function post(body: string, url = slack.webhookUrl()): Promise<[number, string]> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return [res.status, await res.text()];
}

const header = (text: string) => ({ type: 'header', text: { type: 'plain_text', text, emoji: true } });
const mrkdwn = (text: string) => ({ type: 'mrkdwn', text });

describe('the fake Slack incoming webhook', () => {
  it('takes a message within Block Kit limits', async () => {
    const blocks = [
      header('h'.repeat(150)),
      { type: 'section', fields: Array.from({ length: 10 }, () => mrkdwn('f'.repeat(2000))) },
      { type: 'section', text: mrkdwn('s'.repeat(3000)) },
      { type: 'context', elements: [mrkdwn('<https://example.com|link>')] },
      { type: 'divider' },
    ];
    expect(await post(JSON.stringify({ text: 'fallback', blocks }))).toEqual([200, 'ok']);
    expect(await post(JSON.stringify({ text: 'only text' }))).toEqual([200, 'ok']);
  });

  it('refuses what Slack refuses, with its word', async () => {
    const accepted = slack.messages().length;
    expect(await post('not json')).toEqual([400, 'invalid_payload']);
    expect(await post('[1]')).toEqual([400, 'invalid_payload']);
    expect(await post('{}')).toEqual([400, 'no_text']);
    expect(await post(JSON.stringify({ text: '' }))).toEqual([400, 'no_text']);
    expect(await post(JSON.stringify({ text: 'x', blocks: '[]' }))).toEqual([400, 'invalid_blocks_format']);
    const refused: unknown[][] = [
      [header('h'.repeat(151))],
      [{ type: 'header', text: mrkdwn('a header is plain_text') }],
      [{ type: 'section', text: mrkdwn('s'.repeat(3001)) }],
      [{ type: 'section', fields: Array.from({ length: 11 }, () => mrkdwn('f')) }],
      [{ type: 'section', fields: [mrkdwn('f'.repeat(2001))] }],
      [{ type: 'section' }],
      [{ type: 'section', text: mrkdwn('') }],
      [{ type: 'section', text: { type: 'mrkdwn', text: 'x', emoji: true } }],
      [{ type: 'context', elements: [] }],
      [{ type: 'no_such_block' }],
      Array.from({ length: 51 }, () => ({ type: 'divider' })),
    ];
    for (const blocks of refused) {
      expect(await post(JSON.stringify({ text: 'fallback', blocks })), JSON.stringify(blocks)).toEqual([
        400,
        'invalid_blocks',
      ]);
    }
    expect(slack.messages()).toHaveLength(accepted);
  });

  it('answers 404 no_service to a path that is no webhook', async () => {
    const url = new URL(slack.webhookUrl());
    expect(await post('{"text":"x"}', `${url.origin}/services/only-two/parts`)).toEqual([404, 'no_service']);
  });
});
