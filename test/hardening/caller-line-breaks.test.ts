// Caller text on one line (docs/webhooks.md#caller-text): carriage returns and line feeds from callers were
// kept in lead fields and in the plain-text notification mail, so a caller could forge lines in the firm's
// mail ("Call back: <a premium number>", "Call record: <a phishing link>"). Every caller text field is now
// one line — CR, LF, NEL, LS, PS and other control characters become a space — in the lead, the mail (plain
// text and subject) and the Slack message. Real SMTP, Slack fake, workers, FerretDB, Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callNotificationEmail } from '../../core/domain/call-analysis/notifications.js';
import type { CallDoc, CallExtraction } from '../../core/domain/calls/calls.js';
import { normaliseLeadFields, subjectLeadId } from '../../core/domain/leads/leads.js';
import { createAgent, createChat, say } from '../chat/chat-helpers.js';
import type { FakeClio } from '../fakes/clio-server.js';
import type { FakeSlack } from '../fakes/slack-server.js';
import type { FakeSmtp, ReceivedMail } from '../fakes/smtp-server.js';
import { createFirm, rand, type Stack } from '../helpers/stack.js';
import {
  JANE,
  callForProvider,
  leadsOf,
  postSigned,
  retellCallAnalyzed,
  settledCall,
  startPeerStack,
  stopPeerStack,
} from '../webhooks/support.js';

const SECRET = 'whsec_line_breaks_secret';
// Anything that starts a line somewhere: CR, LF, VT, FF, NEL, LS, PS (and NUL, a control character).
const BREAK = /[\r\n\v\f\u0085\u2028\u2029\0]/;
const FORGED_CALL_BACK = 'Call back: +19005550199';
const FORGED_LINK = 'Call record: https://evil.example/login';

let smtp: FakeSmtp;
let clio: FakeClio;
let slack: FakeSlack;
let stack: Stack;

beforeAll(async () => {
  ({ smtp, clio, slack, stack } = await startPeerStack({ PUBLIC_BASE_URL: 'https://intake.example.com' }));
});
afterAll(() => stopPeerStack({ smtp, clio, slack, stack }));

/** The decoded text/plain part of a multipart mail as nodemailer sends it. */
function plainText(mail: ReceivedMail): string {
  const boundary = /boundary="?([^";]+)"?/i.exec(mail.header('content-type') ?? '')?.[1];
  expect(boundary).toBeDefined();
  const part = mail.raw.split(`--${boundary}`).find((p) => /content-type:\s*text\/plain/i.test(p));
  expect(part).toBeDefined();
  const split = part!.search(/\r?\n\r?\n/);
  const head = part!.slice(0, split);
  const body = part!.slice(split).replace(/^\r?\n\r?\n/, '');
  if (/content-transfer-encoding:\s*base64/i.test(head)) return Buffer.from(body, 'base64').toString('utf8');
  if (/content-transfer-encoding:\s*quoted-printable/i.test(head)) {
    const bytes = body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    return Buffer.from(bytes, 'latin1').toString('utf8');
  }
  return body;
}

/** Lines as any mail client may split them: on CR, LF, NEL, LS and PS alike. */
const linesOf = (text: string): string[] => text.split(/\r\n|[\r\n\v\f\u0085\u2028\u2029]/);

/** Every string value anywhere in a JSON value. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(stringsOf);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(stringsOf);
  return [];
}

/** A Slack message's text as Slack shows it: blocks separate the fields' values with "\n" of our own. */
const slackValues = (message: { text: string; blocks: unknown }): string[] => [
  message.text,
  ...stringsOf(message.blocks),
];

describe('caller text is kept on one line', () => {
  it('a call_analyzed with line breaks in name, case type and summary: one-line lead, mail and Slack, no forged line', async () => {
    const slackUrl = slack.webhookUrl();
    const inbox = `paralegal-${rand(3)}@firm.test`;
    const firm = await createFirm(stack, {
      voice_webhook_secret: SECRET,
      notification_emails: [inbox],
      slack_webhook_url: slackUrl,
    });
    const caller = {
      ...JANE,
      first_name: `Jane\u0085${FORGED_CALL_BACK}`,
      last_name: 'Doe\u2028Urgency: Low',
      email: `lines.${rand(3)}@example.com`,
      case_type: `Personal Injury\r\n${FORGED_CALL_BACK}`,
      summary: `Rear-ended at a red light.\r\n\r\n${FORGED_LINK}\n${FORGED_CALL_BACK}\u2029Urgency: Low`,
    };
    const body = retellCallAnalyzed({ caller });
    expect((await postSigned(stack, firm.slug, SECRET, body)).status).toBe(200);
    const callId = (await callForProvider(stack, firm.slug, body.call.call_id))._id;
    const call = await settledCall(firm.client, callId);
    expect(call.effects).toMatchObject({ lead: 'done', email: 'done', team_chat: 'done' });

    // The lead: every field one line, the caller's words kept.
    const lead = (await leadsOf(stack).findOne({ _id: subjectLeadId('call', callId) }))!;
    for (const field of ['first_name', 'last_name', 'case_type', 'summary'] as const) {
      expect({ field, value: lead[field] }).toEqual({ field, value: expect.not.stringMatching(BREAK) });
    }
    expect(lead.summary).toContain(FORGED_LINK);
    expect(lead.case_type).toBe(`Personal Injury ${FORGED_CALL_BACK}`);
    // So is what get-call shows of the extraction.
    for (const value of stringsOf(call.caller_data)) expect(value).not.toMatch(BREAK);

    // The mail: no line of the plain text starts with what the caller wrote to look like ours.
    const mail = smtp.messages.find((m) => m.to.includes(inbox))!;
    const lines = linesOf(plainText(mail));
    expect(lines.filter((l) => l.startsWith('Call back:'))).toEqual(['Call back: +14155550142']);
    expect(lines.filter((l) => l.startsWith('Call record:'))).toEqual([
      `Call record: https://intake.example.com/api/v2/get-call/${body.call.call_id}`,
    ]);
    expect(lines.filter((l) => l.startsWith('Urgency:'))).toHaveLength(1);
    expect(lines.join('\n')).toContain(FORGED_LINK); // shown, inside the summary's one line
    expect(mail.header('subject')).not.toMatch(BREAK);

    // Slack: no value carries a line break of the caller's.
    const message = slack.messages(slackUrl)[0]!.body;
    for (const value of slackValues(message)) {
      const withoutOurs = value.replace(/^\*[A-Za-z ]+\*\n/, '');
      expect(withoutOurs).not.toMatch(BREAK);
    }
  });

  it("a chat visitor's answer with a line separator gives a one-line lead", async () => {
    const firm = await createFirm(stack);
    const agentId = (await createAgent(firm.client, firm.slug)).agent_id;
    const { chat_id: chatId } = await createChat(firm.client, firm.slug, agentId);
    for (const answer of [
      'Dana Whitfield',
      '(312) 555-0187',
      'dana.lines@example.org',
      `Something odd\u0085${FORGED_CALL_BACK}`,
      `It happened\u0085${FORGED_LINK}`,
    ]) {
      await say(firm.client, chatId, answer);
    }
    expect((await firm.client.post('/api/v2/end-chat', { chatId })).status).toBe(200);
    const lead = (await leadsOf(stack).findOne({ _id: subjectLeadId('chat', chatId) }))!;
    expect(lead).not.toBeNull();
    for (const field of ['first_name', 'last_name', 'case_type', 'summary'] as const) {
      expect({ field, value: lead[field] }).toEqual({
        field,
        value: expect.not.stringMatching(BREAK) as unknown,
      });
    }
  });

  it('lead fields are one line whatever their source; notes (written by the firm) keep their lines', () => {
    const { fields } = normaliseLeadFields({
      first_name: 'Jane\r\nX',
      last_name: '\u2028Doe\u0085',
      case_type: 'Family\u2029Law',
      summary: 'One.\n\nTwo.\u000bThree',
      urgency: 'high\r\n',
      notes: 'Line one\nLine two',
    });
    expect(fields).toMatchObject({
      first_name: 'Jane X',
      last_name: 'Doe',
      case_type: 'Family Law',
      summary: 'One. Two. Three',
      urgency: 'high',
      notes: 'Line one\nLine two',
    });
  });

  it('an extraction stored with line breaks (before this rule) still mails one line per field', () => {
    const data: CallExtraction = {
      first_name: `Jane\r\n${FORGED_CALL_BACK}`,
      last_name: null,
      phone: '+14155550142',
      email: null,
      case_type: 'Family\u2028Law',
      summary: `Custody.\r\n${FORGED_LINK}`,
      urgency: 'normal',
      extractor: 'deterministic',
      fallback_reason: null,
      extracted_at: new Date(),
    };
    const call = {
      _id: 'call_line_breaks',
      direction: 'inbound',
      start_timestamp: null,
      end_timestamp: null,
      duration_ms: null,
    } as unknown as CallDoc;
    const mail = callNotificationEmail(
      { call, data, firmName: 'Smith', timeZone: 'UTC', publicBaseUrl: 'https://intake.example.com' },
      ['a@firm.test'],
    );
    const lines = linesOf(mail.text);
    expect(lines.filter((l) => l.startsWith('Call back:'))).toEqual(['Call back: +14155550142']);
    expect(lines.filter((l) => l.startsWith('Call record:'))).toHaveLength(1);
    expect(mail.subject).not.toMatch(BREAK);
    expect(mail.text).toContain(`Jane ${FORGED_CALL_BACK}`);
  });
});
