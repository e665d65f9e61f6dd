import { UnrecoverableError } from 'bullmq';
import type {
  WebhookDeliverJob,
  WebhookFanoutJob,
  WebhookNoticeJob,
  WebhookReplayJob,
} from '../../jobs/webhooks.js';
import { fanOutEvent, replayWindow, runDelivery } from '../../core/domain/events/deliveries.js';
import { runEndpointNotice } from '../../core/domain/events/endpoint-notices.js';
import { smtpCode } from '../../core/domain/call-analysis/call-effects.js';
import type { JobProcessor } from '../runner.js';
import { park } from '../park.js';

/** One event to its firm's subscribed endpoints: a delivery per endpoint, first attempts made here. */
export const webhookFanout: JobProcessor<WebhookFanoutJob> = async (job, { services }) =>
  fanOutEvent(services, job.data, job.attemptsMade > 0 || (job.attemptsStarted ?? 0) > 1);

/** One delivery: its turn in its lane, then a send, then parked until its next retry if it failed. */
export const webhookDeliver: JobProcessor<WebhookDeliverJob> = async (job, { services, token }) => {
  const step = await runDelivery(services, job.data);
  if (step.kind === 'done') return { status: step.status };
  const recheck = step.recheck;
  return park(
    job,
    token,
    step.until,
    services.log,
    recheck === undefined
      ? undefined
      : async () => {
          if (await recheck()) await job.promote();
        },
  );
};

/** Re-sends an endpoint's events of a window, in order, with their original ids. */
export const webhookReplay: JobProcessor<WebhookReplayJob> = async (job, { services }) =>
  replayWindow(services, job.data);

/** Mails the firm that an endpoint was disabled for failing. */
export const webhookNotice: JobProcessor<WebhookNoticeJob> = async (job, { services, attempt }) => {
  try {
    return { state: await runEndpointNotice(services, job.data, attempt) };
  } catch (err) {
    if ((smtpCode(err) ?? 0) >= 500) throw new UnrecoverableError((err as Error).message);
    throw err;
  }
};
