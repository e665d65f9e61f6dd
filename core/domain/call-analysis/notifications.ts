import { createHash } from 'node:crypto';
import type { MailMessage } from '../../integrations/mail/mailer.js';
import { slackEscape, type SlackMessage } from '../../integrations/team-chat/slack.js';
import { escapeHtml } from '../../platform/html.js';
import { shorten, singleLine } from '../../platform/text.js';
import { readableTime } from '../../platform/time-zone.js';
import { shownCallId, type CallDoc, type CallExtraction } from '../calls/calls.js';
import { displayName, singleLineCallerData, type CallerData } from '../intake/caller-data.js';

// What the firm is told about an analysed call or an ended web chat: an email to
// settings.notification_emails and a Slack message to settings.slack_webhook_url. Written for the
// paralegal who calls the person back: who, how to reach them, what about, how urgent, what they
// said, and where the call or chat is. A chat's say it was a web chat, and with which agent.
// Every caller-supplied value is one line (singleLineCallerData: no line breaks or control
// characters, so it cannot forge lines of the plain-text mail; docs/webhooks.md#caller-text) and is
// escaped for its medium (HTML, Slack mrkdwn). Extractions stored before that rule are made
// single-line here too.

/** An ended chat as its notifications tell of it. */
export interface NotifiedChat {
  /** The chat's id (its `_id`, as the API shows it). */
  chat_id: string;
  agent_name: string;
  ended_at: Date | null;
  /** The messages the visitor wrote. */
  visitor_messages: number;
}

/** What the notifications (and the CRM's matter) are about: an analysed call or an ended chat. */
export type NotifiedIntake = { kind: 'call'; call: CallDoc } | { kind: 'chat'; chat: NotifiedChat };

interface NotificationInput {
  intake: NotifiedIntake;
  data: CallerData;
  firmName: string;
  /** The firm's IANA time zone, for the time of the call or chat. */
  timeZone: string;
  publicBaseUrl: string;
}

/** A call's notification input, as calls have always given it. */
interface CallNotificationInput extends Omit<NotificationInput, 'intake' | 'data'> {
  call: CallDoc;
  data: CallExtraction;
}

const NOT_GIVEN = 'not given';

export const callLink = (publicBaseUrl: string, callId: string): string =>
  `${publicBaseUrl}/api/v2/get-call/${encodeURIComponent(callId)}`;

export const chatLink = (publicBaseUrl: string, chatId: string): string =>
  `${publicBaseUrl}/api/v2/get-chat/${encodeURIComponent(chatId)}`;

/** How the messages name what they are about: the words, the id shown, its link and its facts line. */
interface About {
  /** What it is, as in "New intake call": "call", "web chat". */
  noun: string;
  /** The label of its facts row, its record and its id: "Call", "Chat". */
  label: string;
  /** "Caller", "Visitor". */
  person: string;
  shownId: string;
  /** Its stored id, for the Message-ID. */
  storedId: string;
  link: string;
  /** Rows of its own before its facts row (a chat's agent). */
  rows: Array<[string, string | null]>;
  /** Its facts row: direction, time, length. */
  facts: string;
}

const URGENCY_LABEL: Record<CallExtraction['urgency'], string> = {
  urgent: 'URGENT',
  high: 'High',
  normal: 'Normal',
  low: 'Low',
};

function when(call: CallDoc, timeZone: string): string | null {
  const at = call.end_timestamp ?? call.start_timestamp;
  return at === null ? null : readableTime(new Date(at), timeZone);
}

function about(intake: NotifiedIntake, publicBaseUrl: string, timeZone: string): About {
  if (intake.kind === 'call') {
    const { call } = intake;
    return {
      noun: 'call',
      label: 'Call',
      person: 'Caller',
      shownId: shownCallId(call),
      storedId: call._id,
      link: callLink(publicBaseUrl, shownCallId(call)),
      rows: [],
      facts: [
        call.direction === 'inbound' ? 'Inbound' : 'Outbound',
        when(call, timeZone),
        duration(call.duration_ms),
      ]
        .filter((p): p is string => p !== null)
        .join(' · '),
    };
  }
  const { chat } = intake;
  const messages = chat.visitor_messages;
  return {
    noun: 'web chat',
    label: 'Chat',
    person: 'Visitor',
    shownId: chat.chat_id,
    storedId: chat.chat_id,
    link: chatLink(publicBaseUrl, chat.chat_id),
    rows: [['Agent', chat.agent_name]],
    facts: [
      'Web chat',
      chat.ended_at === null ? null : readableTime(chat.ended_at, timeZone),
      `${messages} ${messages === 1 ? 'message' : 'messages'} from the visitor`,
    ]
      .filter((p): p is string => p !== null)
      .join(' · '),
  };
}

function duration(ms: number | null): string | null {
  if (ms === null) return null;
  const seconds = Math.round(ms / 1000);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** The facts both messages show, in order: label and value (null: not given). */
function facts(data: CallerData, it: About): Array<[string, string | null]> {
  return [
    [it.person, displayName(data)],
    ['Phone', data.phone],
    ['Email', data.email],
    ['Case type', data.case_type],
    ['Urgency', URGENCY_LABEL[data.urgency]],
    ...it.rows,
    [it.label, it.facts],
  ];
}

function subject(data: CallerData, it: About): string {
  const prefix = data.urgency === 'urgent' ? '[URGENT] ' : data.urgency === 'high' ? '[High priority] ' : '';
  const who = displayName(data) ?? data.phone ?? data.email ?? `Unknown ${it.person.toLowerCase()}`;
  return shorten(
    `${prefix}New intake ${it.noun}: ${who}${data.case_type === null ? '' : ` — ${data.case_type}`}`,
    200,
  );
}

/**
 * The Message-ID of a call's (or chat's) notification: derived from its id, so a repeated send
 * (an attempt whose outcome was lost) carries the same id and mail clients and servers recognise
 * the duplicate.
 */
export function notificationMessageId(
  callId: string,
  publicBaseUrl: string,
  kind: NotifiedIntake['kind'] = 'call',
): string {
  const host = new URL(publicBaseUrl).hostname || 'intake.invalid';
  const local = /^[A-Za-z0-9_-]{1,100}$/.test(callId)
    ? callId
    : createHash('sha256').update(callId).digest('hex').slice(0, 40);
  return `<${kind}-notification.${local}@${host}>`;
}

/** The input with its caller data single-line, whenever it was extracted. */
const oneLine = (input: NotificationInput): NotificationInput => ({
  ...input,
  data: singleLineCallerData(input.data),
});

/** A call's notification email (intakeNotificationEmail of the call). */
export const callNotificationEmail = ({ call, ...input }: CallNotificationInput, to: string[]): MailMessage =>
  intakeNotificationEmail({ ...input, intake: { kind: 'call', call } }, to);

/** A call's Slack message (intakeNotificationSlack of the call). */
export const callNotificationSlack = ({ call, ...input }: CallNotificationInput): SlackMessage =>
  intakeNotificationSlack({ ...input, intake: { kind: 'call', call } });

export function intakeNotificationEmail(raw: NotificationInput, to: string[]): MailMessage {
  const input = oneLine(raw);
  const { data } = input;
  const it = about(input.intake, input.publicBaseUrl, input.timeZone);
  const link = it.link;
  const rows = facts(data, it);
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  const text = [
    `A new intake ${it.noun} for ${input.firmName} has been analysed.`,
    '',
    ...rows.map(([label, value]) => `${`${label}:`.padEnd(width)}${value ?? NOT_GIVEN}`),
    '',
    'Summary:',
    data.summary,
    '',
    `${it.label} record: ${link}`,
    `${it.label} ID: ${singleLine(it.shownId)}`,
    '',
    data.phone === null ? 'No phone number was collected.' : `Call back: ${data.phone}`,
  ].join('\n');
  const cell = (value: string | null) =>
    value === null ? `<em style="color:#888">${NOT_GIVEN}</em>` : escapeHtml(value);
  const contactLink = (label: string, value: string | null) =>
    value === null ? cell(null) : `<a href="${escapeHtml(`${label}:${value}`)}">${escapeHtml(value)}</a>`;
  const htmlRows = rows
    .map(([label, value]) => {
      const shown =
        label === 'Phone'
          ? contactLink('tel', value)
          : label === 'Email'
            ? contactLink('mailto', value)
            : cell(value);
      return `<tr><th align="left" style="padding:2px 12px 2px 0">${escapeHtml(label)}</th><td>${shown}</td></tr>`;
    })
    .join('\n');
  const html = [
    '<!doctype html>',
    '<html><body style="font-family:Arial,Helvetica,sans-serif;font-size:14px;color:#222">',
    `<p>A new intake ${it.noun} for <strong>${escapeHtml(input.firmName)}</strong> has been analysed.</p>`,
    `<table cellpadding="0" cellspacing="0">\n${htmlRows}\n</table>`,
    '<h3 style="margin:16px 0 4px">Summary</h3>',
    `<p style="white-space:pre-wrap">${escapeHtml(data.summary)}</p>`,
    `<p><a href="${escapeHtml(link)}">Open the ${it.label.toLowerCase()} record</a> (${it.label.toLowerCase()} ID ${escapeHtml(it.shownId)})</p>`,
    '</body></html>',
  ].join('\n');
  return {
    to,
    subject: subject(data, it),
    text,
    html,
    // By the stored _id, unique across firms: an inbound call's shown id is the provider's,
    // which another firm's call may show too.
    messageId: notificationMessageId(it.storedId, input.publicBaseUrl, input.intake.kind),
  };
}

export function intakeNotificationSlack(raw: NotificationInput): SlackMessage {
  const input = oneLine(raw);
  const { data } = input;
  const it = about(input.intake, input.publicBaseUrl, input.timeZone);
  const link = it.link;
  const rows = facts(data, it);
  const who = displayName(data) ?? data.phone ?? `Unknown ${it.person.toLowerCase()}`;
  const headline = `${data.urgency === 'urgent' ? ':rotating_light: ' : ''}New intake ${it.noun}: ${who}${
    data.case_type === null ? '' : ` (${data.case_type})`
  }`;
  const fallback = [
    headline,
    ...rows.map(([label, value]) => `${label}: ${value ?? NOT_GIVEN}`),
    `Summary: ${data.summary}`,
    link,
  ].join('\n');
  return {
    text: slackEscape(shorten(fallback.replace(/\n/g, ' | '), 3000)),
    unfurl_links: false,
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: shorten(headline, 150), emoji: true } },
      {
        type: 'section',
        fields: rows.map(([label, value]) => ({
          type: 'mrkdwn',
          text: shorten(`*${label}*\n${value === null ? `_${NOT_GIVEN}_` : slackEscape(value)}`, 2000),
        })),
      },
      {
        type: 'section',
        text: { type: 'mrkdwn', text: shorten(`*Summary*\n${slackEscape(data.summary)}`, 3000) },
      },
      {
        type: 'context',
        elements: [
          {
            type: 'mrkdwn',
            text: `<${link}|Open the ${it.label.toLowerCase()} record> · ${slackEscape(singleLine(it.shownId))}`,
          },
        ],
      },
    ],
  };
}
