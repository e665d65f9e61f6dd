// The kill switch's Slack notice (docs/campaigns.md#kill-switch) is a message Slack takes for any
// campaign name the API accepts (up to 200 characters): its header block stays within Block
// Kit's 150 characters, or Slack refuses the whole message (400 invalid_blocks) and the firm is
// never told. Sent as runPauseNotice sends it, to the fake Slack, which judges Block Kit's limits.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pauseNoticeSlack } from '../../core/domain/campaigns/pause-notices.js';
import { postToSlack } from '../../core/integrations/team-chat/slack.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';

let slack: FakeSlack;
beforeAll(async () => {
  slack = await startFakeSlack();
});
afterAll(async () => {
  await slack?.close();
});

const notice = (campaignName: string) =>
  pauseNoticeSlack({
    campaignId: 'cmp_long_name',
    campaignName,
    firmName: 'Acme Law',
    reason: {
      code: 'opt_out_rate',
      message: '3 of the last 40 ended calls opted out, more than the 2 of 40 (5 %) allowed.',
      observed: { opt_outs: 3, calls: 40 },
      threshold: { share: 0.05, window: 40 },
      at: new Date('2026-12-04T15:00:00Z'),
    },
    timeZone: 'America/New_York',
    publicBaseUrl: 'https://intake.example.com',
  });

describe('the campaign pause notice on Slack', () => {
  it('reaches the channel for a campaign named with the 200 characters the API allows', async () => {
    const url = slack.webhookUrl();
    const name = `Spring follow-up of every personal injury lead ${'x'.repeat(200)}`.slice(0, 200);
    await postToSlack(url, notice(name), { policy: { allowHttpAndLoopback: true } });
    const [message] = slack.messages(url);
    expect(message?.status).toBe(200);
    const header = (message!.body.blocks as Array<{ type: string; text: { text: string } }>).find(
      (b) => b.type === 'header',
    )!;
    expect(header.text.text.length).toBeLessThanOrEqual(150);
    expect(header.text.text).toMatch(/^:octagonal_sign: Campaign "Spring follow-up of every/);
  });

  it('keeps the whole headline of a short name', async () => {
    const url = slack.webhookUrl();
    await postToSlack(url, notice('Spring <follow-up>'), { policy: { allowHttpAndLoopback: true } });
    const header = (
      slack.messages(url)[0]!.body.blocks as Array<{ type: string; text: { text: string } }>
    )[0]!;
    expect(header.text.text).toBe(':octagonal_sign: Campaign "Spring <follow-up>" paused: too many opt-outs');
  });
});
