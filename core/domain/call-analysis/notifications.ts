import { createHash } from 'node:crypto';
import type { MailMessage } from '../../integrations/mail/mailer.js';
import { slackEscape, type SlackMessage } from '../../integrations/team-chat/slack.js';
import { escapeHtml } from '../../platform/html.js';
import { shorten, singleLine } from '../../platform/text.js';
import { readableTime } from '../../platform/time-zone.js';
import { shownCallId, type CallDoc, type CallExtraction } from '../calls/calls.js';
import { displayName, singleLineCallerData } from '../intake/caller-data.js';

// What the firm is told about an analysed call: an email to settings.notification_emails and a
// Slack message to settings.slack_webhook_url. Written for the paralegal who calls the person
// back: who, how to reach them, what about, how urgent, what they said, and where the call is.
// Every caller-supplied value is one line (singleLineCallerData: no line breaks or control
// characters, so it cannot forge lines of the plain-text mail; docs/webhooks.md#caller-text) and is
// escaped for its medium (HTML, Slack mrkdwn). Extractions stored before that rule are made
// single-line here too.

interface NotificationInput {
  call: CallDoc;
  data: CallExtraction;
  firmName: string;
  /** The firm's IANA time zone, for the time of the call. */
  timeZone: string;
  publicBaseUrl: string;
}

const NOT_GIVEN = 'not given';

export const callLink = (publicBaseUrl: string, callId: string): string =>
  `${publicBaseUrl}/api/v2/get-call/${encodeURIComponent(callId)}`;

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

function duration(ms: number | null): string | null {
  if (ms === null) return null;
  const seconds = Math.round(ms / 1000);
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
}

/** The facts both messages show, in order: label and value (null: not given). */
function facts(input: NotificationInput): Array<[string, string | null]> {
  const { call, data } = input;
  return [
    ['Caller', displayName(data)],
    ['Phone', data.phone],
    ['Email', data.email],
    ['Case type', data.case_type],
    ['Urgency', URGENCY_LABEL[data.urgency]],
    [
      'Call',
      [
        call.direction === 'inbound' ? 'Inbound' : 'Outbound',
        when(call, input.timeZone),
        duration(call.duration_ms),
      ]
        .filter((p): p is string => p !== null)
        .join(' · '),
    ],
  ];
}

function subject(data: CallExtraction): string {
  const prefix = data.urgency === 'urgent' ? '[URGENT] ' : data.urgency === 'high' ? '[High priority] ' : '';
  const who = displayName(data) ?? data.phone ?? data.email ?? 'Unknown caller';
  return shorten(
    `${prefix}New intake call: ${who}${data.case_type === null ? '' : ` — ${data.case_type}`}`,
    200,
  );
}

/**
 * The Message-ID of a call's notification: derived from the call, so a repeated send (an attempt
 * whose outcome was lost) carries the same id and mail clients and servers recognise the duplicate.
 */
export function notificationMessageId(callId: string, publicBaseUrl: string): string {
  const host = new URL(publicBaseUrl).hostname || 'intake.invalid';
  const local = /^[A-Za-z0-9_-]{1,100}$/.test(callId)
    ? callId
    : createHash('sha256').update(callId).digest('hex').slice(0, 40);
  return `<call-notification.${local}@${host}>`;
}

/** The input with its caller data single-line, whenever it was extracted. */
const oneLine = (input: NotificationInput): NotificationInput => ({
  ...input,
  data: singleLineCallerData(input.data),
});

export function callNotificationEmail(raw: NotificationInput, to: string[]): MailMessage {
  const input = oneLine(raw);
  const { call, data } = input;
  const link = callLink(input.publicBaseUrl, shownCallId(call));
  const rows = facts(input);
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  const text = [
    `A new intake call for ${input.firmName} has been analysed.`,
    '',
    ...rows.map(([label, value]) => `${`${label}:`.padEnd(width)}${value ?? NOT_GIVEN}`),
    '',
    'Summary:',
    data.summary,
    '',
    `Call record: ${link}`,
    `Call ID: ${singleLine(shownCallId(call))}`,
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
    `<p>A new intake call for <strong>${escapeHtml(input.firmName)}</strong> has been analysed.</p>`,
    `<table cellpadding="0" cellspacing="0">\n${htmlRows}\n</table>`,
    '<h3 style="margin:16px 0 4px">Summary</h3>',
    `<p style="white-space:pre-wrap">${escapeHtml(data.summary)}</p>`,
    `<p><a href="${escapeHtml(link)}">Open the call record</a> (call ID ${escapeHtml(shownCallId(call))})</p>`,
    '</body></html>',
  ].join('\n');
  return {
    to,
    subject: subject(data),
    text,
    html,
    // By the stored _id, unique across firms: an inbound call's shown id is the provider's,
    // which another firm's call may show too.
    messageId: notificationMessageId(call._id, input.publicBaseUrl),
  };
}

export function callNotificationSlack(raw: NotificationInput): SlackMessage {
  const input = oneLine(raw);
  const { call, data } = input;
  const link = callLink(input.publicBaseUrl, shownCallId(call));
  const rows = facts(input);
  const who = displayName(data) ?? data.phone ?? 'Unknown caller';
  const headline = `${data.urgency === 'urgent' ? ':rotating_light: ' : ''}New intake call: ${who}${
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
            text: `<${link}|Open the call record> · ${slackEscape(singleLine(shownCallId(call)))}`,
          },
        ],
      },
    ],
  };
}
