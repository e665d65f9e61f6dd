import type { Db } from 'mongodb';
import { findAgent } from '../../../core/domain/agents/agents.js';
import { invalidRequest, quote } from '../../../core/platform/errors.js';
import { requireFirm } from '../../../core/domain/access/access.js';
import { disconnectClioIfDropped } from '../../../core/domain/crm/clio-disconnect.js';
import { refuseWidening } from '../../../core/domain/firms/firm-settings.js';
import { createFirm, loadFirm, updateFirm } from '../../../core/domain/firms/firms.js';
import { withFirmLock } from '../../../core/domain/firms/firm-lock.js';
import { publishWebhookKeys, withdrawWebhookKeys } from '../../../core/domain/firms/webhook-keys.js';
import { urlPolicyOf } from '../../../core/platform/config.js';
import { AppError } from '../../../core/platform/errors.js';
import { defineRoute } from '../../route.js';
import { firmView } from './present.js';
import { CreateFirmBody, FirmParams, FirmResponse, PatchFirmBody } from './schema.js';

const tag = 'Firms';

/** The agent that calls missed calls back must be one of the firm's (400 naming the field otherwise). */
async function requireCallbackAgent(db: Db, firm: string, agentId: string): Promise<void> {
  const agent = await findAgent(db, agentId);
  if (agent === null || agent.firm !== firm) {
    throw invalidRequest(
      `settings.missed_call_callback.agent_id ${quote(agentId)} is not an agent of this firm.`,
      [{ path: '/settings/missed_call_callback/agent_id', message: 'is not an agent of this firm' }],
    );
  }
}

export const firmRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/firms',
    operationId: 'createFirm',
    summary: 'Create a firm (platform key)',
    tag,
    auth: { kind: 'platform' },
    body: CreateFirmBody,
    response: FirmResponse,
    errors: [403, 409],
    handler: async ({ services, body }) => {
      const callback = body.settings?.missed_call_callback;
      // A new firm has no agents yet: missed calls are switched on once its agent exists.
      if (callback?.enabled === true)
        await requireCallbackAgent(services.mongo.db, body.slug, callback.agent_id);
      const created = await createFirm(services.mongo.db, body, urlPolicyOf(services.config));
      // Its webhook keys' copy, for deliveries while MongoDB is down (core/domain/firms/webhook-keys.ts).
      // A firm is made with Redis down too: then its first delivery's read writes the copy. Not
      // tried while the connection is not ready: the command would wait in the offline queue
      // through two reconnect attempts (up to 4 s, core/platform/redis.ts) only to fail.
      if (services.redis.status === 'ready') {
        await publishWebhookKeys(services, created).catch((err: unknown) =>
          services.log.warn({ err, firm: created._id }, 'the webhook keys copy could not be written'),
        );
      }
      return firmView(created);
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/firms/{slug}',
    operationId: 'getFirm',
    summary: 'Read a firm (a firm token: its own)',
    tag,
    auth: { kind: 'token' },
    params: FirmParams,
    response: FirmResponse,
    errors: [403, 404],
    handler: async ({ services, principal, params }) =>
      firmView(await requireFirm(services.mongo.db, principal, params.slug)),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/api/firms/{slug}',
    operationId: 'updateFirm',
    summary:
      'Change a firm name or settings (null removes a setting; "********" keeps a secret, except crm.access_token when crm.base_url or crm.region changes; a firm token may narrow allowed_call_countries but not add to it, nor turn allow_premium_numbers on: 403)',
    tag,
    auth: { kind: 'token' },
    params: FirmParams,
    body: PatchFirmBody,
    response: FirmResponse,
    errors: [403, 404],
    handler: async ({ services, principal, params, body }) => {
      const seen = await requireFirm(services.mongo.db, principal, params.slug);
      // The firm's writers take turns, and this one merges the body into the firm as it is now,
      // read inside the lock: the whole document is written (core/domain/firms/firm-lock.ts).
      const { firm, updated } = await withFirmLock(services, seen._id, async () => {
        const firm = (await loadFirm(services.mongo.db, seen._id)) ?? seen;
        if (principal.kind !== 'platform' && body.settings !== undefined)
          refuseWidening(firm.settings, body.settings, {
            openaiDailyChars: services.config.openaiDailyCharsPerFirm,
            widgetDailyBookings: services.config.widgetDailyBookingCap,
          });
        const callback = body.settings?.missed_call_callback;
        if (callback?.enabled === true)
          await requireCallbackAgent(services.mongo.db, firm._id, callback.agent_id);
        // The webhook keys' copy goes before the write and comes back after it, so a key replaced
        // here is never taken from it once this has answered (core/domain/firms/webhook-keys.ts).
        await withdrawWebhookKeys(services, firm._id);
        const updated = await updateFirm(services.mongo.db, firm, body, urlPolicyOf(services.config)).catch(
          async (err: unknown) => {
            // Refused before anything was written (a setting not taken, the firm gone): the copy as it was.
            if (err instanceof AppError && err.status < 500) await publishWebhookKeys(services, firm);
            throw err;
          },
        );
        await publishWebhookKeys(services, updated);
        return { firm, updated };
      });
      // Leaving Clio's OAuth connection revokes its grant and deletes its tokens (docs/clio.md#disconnecting).
      await disconnectClioIfDropped(services, firm._id, firm.settings.crm, updated.settings.crm);
      return firmView(updated);
    },
  }),
];
