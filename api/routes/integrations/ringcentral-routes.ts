import { Type } from '@sinclair/typebox';
import type { Context } from 'koa';
import { requireFirm } from '../../../core/domain/access/access.js';
import {
  browserKeyOf,
  connectCookie,
  cookieValue,
  setCookieHeader,
} from '../../../core/domain/crm/connect-cookie.js';
import { getFirm } from '../../../core/domain/firms/firms.js';
import {
  receiveRingCentralCallback,
  ringCentralStatus,
  startRingCentralConnect,
} from '../../../core/domain/phone/ringcentral-connection.js';
import { ensureRingCentralSubscription } from '../../../core/domain/phone/ringcentral-subscription.js';
import { invalidRequest } from '../../../core/platform/errors.js';
import type { Services } from '../../../core/wiring/services.js';
import { Body, FirmSlug } from '../../schemas/common.js';
import { defineRoute } from '../../route.js';
import { ringCentralConnectedPage, sendPage, withErrorPage } from './pages.js';

// RingCentral connected with OAuth (docs/ringcentral.md#connection): the connect request (an
// authorize URL for the firm's browser, with the connect cookie the flow is bound to), the callback
// RingCentral sends the browser back to (PUBLIC_BASE_URL/api/integrations/ringcentral/callback, the
// redirect URI to register in the RingCentral app), and the connection's status.

const tag = 'Integrations';

const ConnectBody = Body({ firmSlug: FirmSlug });
const ConnectResponse = Type.Object({
  authorize_url: Type.String({
    description: "RingCentral's authorize page for the firm's browser (10 minutes, once)",
  }),
});
const CallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  state: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 2048 })),
});
const StatusQuery = Type.Object({ firmSlug: FirmSlug });
const StatusResponse = Type.Object({
  connected: Type.Boolean(),
  status: Type.Union([
    Type.Literal('connected'),
    Type.Literal('reconnect_required'),
    Type.Literal('not_connected'),
  ]),
  connected_at: Type.Union([Type.String(), Type.Null()]),
  subscription_expires_at: Type.Union([Type.String(), Type.Null()]),
});

const browserKey = (services: Services, koa: Context) =>
  cookieValue(koa.get('Cookie') || undefined, connectCookie(services.config.publicBaseUrl).name);

const NOT_CONNECTED = 'RingCentral was not connected';

export const ringCentralRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/integrations/ringcentral/connect',
    operationId: 'connectRingCentral',
    summary:
      "Start connecting a firm's RingCentral with OAuth (authorization code with PKCE): RingCentral's authorize URL for the firm's browser, " +
      'with the connect cookie the flow is bound to. 409 ringcentral_oauth_not_configured when RINGCENTRAL_CLIENT_ID/RINGCENTRAL_CLIENT_SECRET are unset',
    tag,
    auth: { kind: 'token' },
    body: ConnectBody,
    response: ConnectResponse,
    errors: [403, 404, 409],
    handler: async ({ services, principal, body, koa }) => {
      const firm = await requireFirm(services.mongo.db, principal, body.firmSlug);
      const { key } = browserKeyOf(browserKey(services, koa));
      const url = await startRingCentralConnect(services, firm._id, key);
      koa.append('Set-Cookie', setCookieHeader(connectCookie(services.config.publicBaseUrl), key));
      koa.set('Cache-Control', 'no-store');
      return { authorize_url: url };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/integrations/ringcentral/callback',
    operationId: 'ringCentralCallback',
    summary:
      'Where RingCentral sends the browser back: in the browser that started the flow only (any other: 403, the code is not exchanged), ' +
      "exchanges the code with the PKCE verifier, keeps the firm's connection and subscribes to its missed calls. A bad, expired or used state: 400, nothing stored",
    tag,
    auth: { kind: 'none' },
    addressLimited: true,
    query: CallbackQuery,
    responseContentType: 'text/html',
    errors: [403, 409, 502],
    handler: async ({ services, query, koa }) => {
      await withErrorPage(
        koa,
        async () => {
          if (query.error !== undefined) {
            throw invalidRequest(
              `RingCentral did not grant access (${query.error.slice(0, 100)}); start again from the connect link.`,
              [{ path: '/error', message: 'RingCentral answered an error instead of a code' }],
            );
          }
          if (query.code === undefined || query.state === undefined) {
            throw invalidRequest('The callback needs the code and state RingCentral sends.', [
              ...(query.code === undefined ? [{ path: '/code', message: 'is required' }] : []),
              ...(query.state === undefined ? [{ path: '/state', message: 'is required' }] : []),
            ]);
          }
          const firm = await receiveRingCentralCallback(
            services,
            query.code,
            query.state,
            browserKey(services, koa),
          );
          let subscribed = true;
          try {
            await ensureRingCentralSubscription(services, firm);
          } catch (err) {
            // Connected all the same: the maintenance job makes the subscription at its next run.
            subscribed = false;
            services.log.warn({ err, firm }, 'the RingCentral subscription was not made at connect');
          }
          const name = (await getFirm(services.mongo.db, firm))?.name ?? firm;
          sendPage(koa, 200, ringCentralConnectedPage(name, firm, subscribed));
        },
        NOT_CONNECTED,
      );
      return undefined;
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/integrations/ringcentral/status',
    operationId: 'ringCentralStatus',
    summary:
      "A firm's RingCentral connection: connected, reconnect_required (RingCentral refused a refresh) or not_connected; never a token",
    tag,
    auth: { kind: 'token' },
    query: StatusQuery,
    response: StatusResponse,
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const firm = await requireFirm(services.mongo.db, principal, query.firmSlug);
      return ringCentralStatus(services.mongo.db, firm._id);
    },
  }),
];
