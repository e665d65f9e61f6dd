import { createHash } from 'node:crypto';
import type { Db } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { runEffect } from '../../platform/db/effect-recorder.js';
import type {
  Attempt,
  EffectOutcome,
  EffectRecord,
  EffectSubjectDoc,
} from '../../platform/db/effect-records.js';
import { urlPolicyOf } from '../../platform/config.js';
import { shorten, singleLine } from '../../platform/text.js';
import { readableTime } from '../../platform/time-zone.js';
import type { MailMessage } from '../../integrations/mail/mailer.js';
import {
  TeamChatError,
  postToSlack,
  slackEscape,
  type SlackMessage,
} from '../../integrations/team-chat/slack.js';
import { smtpCode } from '../call-analysis/call-effects.js';
import { getFirm } from '../firms/firms.js';
import { findCampaign, withCampaignLock, type PausedReason } from './campaign-store.js';

// The firm is told when the kill switch pauses one of its campaigns (kill-switch.ts): a mail to
// settings.notification_emails and a Slack message to settings.slack_webhook_url, as it is told
// of an analysed call. Each is an effect (core/platform/db/effect-recorder.ts) recorded on the
// pause's own document (`<campaign>|pause|<n>`, written under the campaign's lock with the
// pause), run by its own job: a retried job or a repeated enqueue never sends it twice, and a
// failing Slack is retried alone.

export const PAUSE_NOTICE_CHANNELS = ['email', 'team_chat'] as const;
export type PauseNoticeChannel = (typeof PAUSE_NOTICE_CHANNELS)[number];

/** One automatic pause of a campaign, with the records of its notices. */
export interface CampaignPauseDoc {
  _id: string;
  campaign_id: string;
  firm: string;
  /** The pause's number on the campaign (1, 2, … as the switch pauses it again after resumes). */
  pause: number;
  reason: PausedReason;
  notices?: Partial<Record<PauseNoticeChannel, EffectRecord>>;
  created_at: Date;
}

export const pausesCollection = (db: Db) => collection<CampaignPauseDoc>(db, COLLECTIONS.campaignPauses);
export const pauseDocId = (campaignId: string, pause: number): string => `${campaignId}|pause|${pause}`;

interface NoticeInput {
  campaignId: string;
  campaignName: string;
  firmName: string;
  reason: PausedReason;
  timeZone: string;
  publicBaseUrl: string;
}

const campaignLink = (publicBaseUrl: string, id: string) =>
  `${publicBaseUrl}/api/leads/campaigns/${encodeURIComponent(id)}`;

const headline = (input: NoticeInput) =>
  shorten(
    `Campaign "${input.campaignName}" paused: ${
      input.reason.code === 'opt_out_rate' ? 'too many opt-outs' : 'too many failed dials'
    }`,
    150,
  );

/** The plain-text lines both messages say. */
function lines(input: NoticeInput): string[] {
  const resume = `POST ${campaignLink(input.publicBaseUrl, input.campaignId)}/resume`;
  return [
    `The campaign "${singleLine(input.campaignName)}" of ${singleLine(input.firmName)} was paused automatically at ${readableTime(input.reason.at, input.timeZone)}.`,
    '',
    `Why: ${input.reason.message}`,
    '',
    'Calls in progress finish; no new call is placed until the campaign is resumed.',
    input.reason.code === 'opt_out_rate'
      ? 'The numbers that opted out are on your do-not-call list. Check the script and the list before resuming.'
      : 'Check the numbers, the caller ID and the voice provider account before resuming.',
    `To go on: ${resume} (the kill switch then counts afresh); or cancel the campaign.`,
    '',
    `Campaign: ${campaignLink(input.publicBaseUrl, input.campaignId)}`,
    `Campaign ID: ${input.campaignId}`,
  ];
}

/** The Message-ID of a pause's mail, derived from the pause: a repeated send is recognisable. */
function messageId(pauseId: string, publicBaseUrl: string): string {
  const host = new URL(publicBaseUrl).hostname || 'intake.invalid';
  return `<campaign-pause.${createHash('sha256').update(pauseId).digest('hex').slice(0, 40)}@${host}>`;
}

export function pauseNoticeEmail(input: NoticeInput, to: string[], pauseId: string): MailMessage {
  return {
    to,
    subject: headline(input),
    text: lines(input).join('\n'),
    messageId: messageId(pauseId, input.publicBaseUrl),
  };
}

export function pauseNoticeSlack(input: NoticeInput): SlackMessage {
  const body = lines(input);
  return {
    text: slackEscape(shorten(`${headline(input)} | ${body.filter((l) => l !== '').join(' | ')}`, 3000)),
    unfurl_links: false,
    blocks: [
      {
        type: 'header',
        // Block Kit's header holds at most 150 characters (Slack refuses the message otherwise).
        text: { type: 'plain_text', text: shorten(`:octagonal_sign: ${headline(input)}`, 150), emoji: true },
      },
      { type: 'section', text: { type: 'mrkdwn', text: shorten(slackEscape(body.join('\n')), 3000) } },
    ],
  };
}

type Result = Record<string, unknown>;
const skipped = (reason: string): EffectOutcome<Result> => ({ state: 'skipped', result: { reason } });

/** A failure no retry can fix (the record is already `failed`): the job should stop. */
export function isFinalNoticeFailure(err: unknown): boolean {
  if (err instanceof TeamChatError) return err.final;
  return (smtpCode(err) ?? 0) >= 500;
}

const EFFECTS = {
  email: {
    mayHaveHappened: (err: unknown) => smtpCode(err) === null,
    isFinal: (err: unknown) => (smtpCode(err) ?? 0) >= 500,
  },
  team_chat: {
    mayHaveHappened: (err: unknown) => !(err instanceof TeamChatError) || err.mayHaveBeenSent,
    isFinal: (err: unknown) => err instanceof TeamChatError && err.final,
  },
} satisfies Record<PauseNoticeChannel, object>;

/** Sends one notice of one automatic pause (the campaignPauseNotice job); its state after this attempt. */
export async function runPauseNotice(
  services: Services,
  job: { campaignId: string; firm: string; pause: number; channel: PauseNoticeChannel },
  attempt: Attempt,
): Promise<'missing' | EffectRecord['state']> {
  const db = services.mongo.db;
  const id = pauseDocId(job.campaignId, job.pause);
  const pause = await pausesCollection(db).findOne({ _id: id });
  const campaign = await findCampaign(db, job.campaignId);
  // The pause's record without the campaign having said so: a pause that died half-way (the
  // next one, with the same number, writes the record again and enqueues its notices).
  if (pause === null || campaign === null || (campaign.auto_pauses ?? 0) < job.pause) return 'missing';
  const record = await runEffect<Result>(
    {
      collection: db.collection<EffectSubjectDoc>(COLLECTIONS.campaignPauses),
      id,
      exclusive: (write) => withCampaignLock(services, job.campaignId, write),
    },
    { ...EFFECTS[job.channel], path: `notices.${job.channel}` },
    attempt,
    async () => {
      const firm = await getFirm(db, pause.firm);
      if (firm === null) return skipped('The firm no longer exists.');
      const input: NoticeInput = {
        campaignId: campaign._id,
        campaignName: campaign.name,
        firmName: firm.name,
        reason: pause.reason,
        timeZone: firm.settings.timezone,
        publicBaseUrl: services.config.publicBaseUrl,
      };
      if (job.channel === 'email') {
        if (services.mailer === null) return skipped('Email is not configured for the service (SMTP_URL).');
        const to = firm.settings.notification_emails;
        if (to.length === 0) return skipped('The firm has no notification_emails.');
        const sent = await services.mailer.send(pauseNoticeEmail(input, to, id));
        return { state: 'done', result: { message_id: sent.messageId, accepted: sent.accepted } };
      }
      const url = firm.settings.slack_webhook_url;
      if (url === undefined) return skipped('The firm has no slack_webhook_url.');
      await postToSlack(url, pauseNoticeSlack(input), { policy: urlPolicyOf(services.config) });
      return { state: 'done', result: { channel: 'slack' } };
    },
  );
  return record.state;
}
