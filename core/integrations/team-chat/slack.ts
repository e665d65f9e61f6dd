import { IncomingWebhook, type IncomingWebhookSendArguments } from '@slack/webhook';
import type { UrlPolicy } from '../../platform/url-policy.js';
import { RateLimitedError, parseRetryAfter, withRetryAfter } from '../../platform/retry-after.js';
import {
  guardedFetch,
  requestMayHaveBeenSent,
  urlPolicyRefusal,
  type GuardedResponse,
} from '../http/guarded-http.js';

// Team chat: a message to a firm's Slack incoming webhook (settings.slack_webhook_url) through
// @slack/webhook, whose HTTP goes through guardedFetch so the URL policy holds at call time.
// The SDK does not retry (retries: 0) and hides a 429's headers, so the raw answer is observed
// for its Retry-After: a 429 is waited out and the same message sent again (bounded); anything
// else fails the attempt and the job's backoff decides when to try again.

export type SlackMessage = Pick<IncomingWebhookSendArguments, 'text' | 'blocks' | 'unfurl_links'>;

/**
 * Text made safe to insert into Slack mrkdwn: &, < and > are its control characters (a mention
 * such as `<!channel>`, a link `<https://…|label>`), escaped as Slack asks
 * (https://api.slack.com/reference/surfaces/formatting#escaping). For values a message inserts:
 * text written as mrkdwn on purpose keeps its markup.
 */
export const slackEscape = (text: string): string =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Why a Slack post failed. `final`: retrying cannot help (the webhook was revoked, the URL refused). */
export class TeamChatError extends Error {
  constructor(
    message: string,
    readonly final: boolean,
    /** False when the message certainly did not reach Slack. */
    readonly mayHaveBeenSent: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'TeamChatError';
  }
}

interface SlackOptions {
  policy: UrlPolicy;
  timeoutMs?: number;
  /** Bounds on waiting out 429s within one attempt (core/platform/retry-after.ts). */
  maxRateLimitWaits?: number;
  maxRateLimitWaitMs?: number;
  /** Abandons the post when aborted: a request out is destroyed, none begins after. */
  signal?: AbortSignal;
}

/** Posts one message to an incoming webhook. */
export async function postToSlack(url: string, message: SlackMessage, options: SlackOptions): Promise<void> {
  let last: GuardedResponse | null = null;
  const webhook = new IncomingWebhook(url, {
    fetch: guardedFetch(
      options.policy,
      options.timeoutMs ?? 15_000,
      (answer) => (last = answer),
      options.signal,
    ),
    retryConfig: { retries: 0 },
  });
  const sendOnce = async (): Promise<void> => {
    if (options.signal?.aborted) {
      throw new TeamChatError('The Slack post was abandoned before it was sent.', false, false, {
        cause: options.signal.reason,
      });
    }
    last = null;
    try {
      await webhook.send(message);
    } catch (err) {
      const answer = last as GuardedResponse | null;
      if (answer?.status === 429) {
        throw new RateLimitedError('Slack', parseRetryAfter(answer.headers['retry-after']));
      }
      throw asTeamChatError(err, answer);
    }
  };
  try {
    await withRetryAfter(sendOnce, {
      ...(options.maxRateLimitWaits === undefined ? {} : { maxWaits: options.maxRateLimitWaits }),
      ...(options.maxRateLimitWaitMs === undefined ? {} : { maxWaitMs: options.maxRateLimitWaitMs }),
    });
  } catch (err) {
    if (err instanceof RateLimitedError) {
      throw new TeamChatError(`${err.message} Still limited after waiting; trying later.`, false, false, {
        cause: err,
      });
    }
    throw err;
  }
}

function asTeamChatError(err: unknown, answer: GuardedResponse | null): TeamChatError {
  const refused = urlPolicyRefusal(err);
  if (refused !== null) {
    return new TeamChatError(`The Slack webhook URL is not allowed: ${refused.reason}`, true, false, {
      cause: err,
    });
  }
  if (answer !== null) {
    const status = answer.status;
    // Slack's own answers: 400 invalid_payload, 403 action_prohibited, 404 no_service (the
    // webhook was removed), 410 channel_is_archived. Those stay wrong however often we try.
    const final = status >= 300 && status < 500 && status !== 408;
    const reason = answer.body.slice(0, 100).replace(/\s+/g, ' ').trim();
    return new TeamChatError(
      `Slack answered ${status}${reason === '' ? '' : ` (${reason})`}.`,
      final,
      false,
      {
        cause: err,
      },
    );
  }
  const message = err instanceof Error ? err.message : String(err);
  return new TeamChatError(`Slack could not be reached: ${message}`, false, requestMayHaveBeenSent(err), {
    cause: err,
  });
}
