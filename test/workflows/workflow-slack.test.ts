// notify_slack (docs/workflows.md#nodes): the values a template inserts are escaped for Slack's
// mrkdwn (&, <, > as &amp; &lt; &gt;: https://api.slack.com/reference/surfaces/formatting#escaping),
// so a lead's name cannot mention the channel or hide a link; the firm's own text around them
// keeps the markup it wrote on purpose. On real peers: the API, the workers, the fake Slack.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

let slack: FakeSlack;
let stack: Stack;
let firm: Awaited<ReturnType<typeof createFirm>>;
let channel: string;

beforeAll(async () => {
  slack = await startFakeSlack();
  stack = await startStack({ workers: true });
  channel = slack.webhookUrl();
  firm = await createFirm(stack, { slack_webhook_url: channel });
});
afterAll(async () => {
  await stack?.stop();
  await slack?.close();
});

describe('notify_slack', () => {
  it("escapes the lead's values it inserts, not the firm's own markup around them", async () => {
    const created = await firm.client.post('/api/workflows', {
      firmSlug: firm.slug,
      name: 'Tell the channel',
      nodes: [
        { id: 'new', type: 'trigger.event', data: { event: 'lead.created' } },
        {
          id: 'tell',
          type: 'notify_slack',
          data: {
            text: '<!here> New lead: *{{lead.name}}* ({{lead.email}}) <https://crm.example/{{lead.id}}|open>',
          },
        },
      ],
      edges: [{ id: 'e1', source: 'new', target: 'tell' }],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const activated = await firm.client.post(`/api/workflows/${created.body.id}/activate`, {});
    expect(activated.status, JSON.stringify(activated.body)).toBe(200);

    const email = `m&m.${rand(3)}@example.com`;
    const lead = await firm.client.post('/api/leads', {
      firmSlug: firm.slug,
      first_name: '<!channel>',
      last_name: '<https://evil.example|click> & co',
      email,
    });
    expect(lead.status, JSON.stringify(lead.body)).toBe(200);

    const [message] = await eventually(async () => {
      const got = slack.messages(channel);
      expect(got).toHaveLength(1);
      return got;
    }, 30_000);
    expect(message!.body.text).toBe(
      `<!here> New lead: *&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; co* ` +
        `(${email.replace('&', '&amp;')}) <https://crm.example/${lead.body.id}|open>`,
    );
  });
});
