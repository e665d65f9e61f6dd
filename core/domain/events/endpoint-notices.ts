import { createHash } from 'node:crypto';
import type { Services } from '../../wiring/services.js';
import { COLLECTIONS, collection } from '../../platform/db/collections.js';
import { claim } from '../../platform/db/claim.js';
import { runEffect } from '../../platform/db/effect-recorder.js';
import { newEffectRecord, type Attempt, type EffectSubjectDoc } from '../../platform/db/effect-records.js';
import { withRecordLock } from '../../platform/redis-mutex.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { readableTime } from '../../platform/time-zone.js';
import { smtpCode } from '../call-analysis/call-effects.js';
import { getFirm } from '../firms/firms.js';
import type { WebhookNoticeJob } from '../../../jobs/webhooks.js';
import { findEndpoint } from './endpoints.js';

// The firm is told by mail when one of its endpoints is disabled for failing too long, as it is
// told of a campaign's automatic pause: an effect (core/platform/db/effect-recorder.ts) recorded
// on the notice's own document (`<endpoint>|<disabled at ms>`), so a retried job never mails twice.

type Result = Record<string, unknown>;

export async function runEndpointNotice(
  services: Services,
  job: WebhookNoticeJob,
  attempt: Attempt,
): Promise<string> {
  const db = services.mongo.db;
  const id = `${job.endpoint}|${job.at}`;
  const coll = collection<EffectSubjectDoc>(db, COLLECTIONS.webhookNotices);
  await claim(coll, { _id: id, firm: job.firm, endpoint: job.endpoint, mail: newEffectRecord() });
  const record = await runEffect<Result>(
    {
      collection: coll,
      id,
      exclusive: (write) =>
        withRecordLock(services.redis, redisKeys(services.config).webhookEndpointsLock(job.firm, id), write),
    },
    {
      path: 'mail',
      mayHaveHappened: (err) => smtpCode(err) === null,
      isFinal: (err) => (smtpCode(err) ?? 0) >= 500,
    },
    attempt,
    async () => {
      const firm = await getFirm(db, job.firm);
      const endpoint = await findEndpoint(db, job.endpoint);
      if (firm === null || endpoint === null)
        return { state: 'skipped', result: { reason: 'The firm or the endpoint no longer exists.' } };
      if (services.mailer === null)
        return {
          state: 'skipped',
          result: { reason: 'Email is not configured for the service (SMTP_URL).' },
        };
      const to = firm.settings.notification_emails;
      if (to.length === 0)
        return { state: 'skipped', result: { reason: 'The firm has no notification_emails.' } };
      const host = new URL(endpoint.url).host;
      const days = Math.round(services.config.webhookDisableAfterMs / 86_400_000);
      const sent = await services.mailer.send({
        to,
        subject: `Webhook endpoint disabled: ${host}`,
        text: [
          `Every delivery to your webhook endpoint ${host} (${endpoint._id}) has failed since ${
            endpoint.failing_since === null
              ? 'a while'
              : readableTime(endpoint.failing_since, firm.settings.timezone)
          }${days >= 1 ? ` (${days} days)` : ''}, so it was disabled at ${readableTime(new Date(job.at), firm.settings.timezone)}.`,
          '',
          'No events are sent to it while it is disabled. Fix the receiver, enable the endpoint again',
          `(PATCH ${services.config.publicBaseUrl}/api/webhook-endpoints/${endpoint._id} {"enabled": true}),`,
          'and replay the events you missed (POST …/replay {"from", "to"}).',
        ].join('\n'),
        messageId: `<webhook-disabled.${createHash('sha256').update(id).digest('hex').slice(0, 40)}@${
          new URL(services.config.publicBaseUrl).hostname || 'intake.invalid'
        }>`,
      });
      return { state: 'done', result: { message_id: sent.messageId } };
    },
  );
  return record.state;
}
