import { CHALLENGE_MAX_NUMBER, issueChallenge } from '../../../core/domain/widget/altcha.js';
import { keyForChallenge, openKeySession } from '../../../core/domain/widget/key-session.js';
import { defineRoute } from '../../route.js';
import {
  WidgetChallengeQuery,
  WidgetChallengeResponse,
  WidgetSessionBody,
  WidgetSessionResponse,
} from './session-schema.js';

const tag = 'Widget';

/** The request's Origin header, undefined when absent (a browser sends it on every cross-origin POST). */
const originOf = (header: string): string | undefined => (header === '' ? undefined : header);

export const widgetSessionRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/widget/session',
    operationId: 'openWidgetSession',
    summary:
      "A widget token for a publishable widget key, from a page on one of the key's allowed origins (403 origin_not_allowed otherwise), " +
      'with a solved ALTCHA challenge when the key asks for one (400 altcha_required/altcha_invalid/altcha_expired, 409 altcha_replayed); ' +
      'the token lives one hour and may only chat, from that origin, with one agent of the firm',
    tag,
    auth: { kind: 'none' },
    addressLimited: true,
    cors: 'widgetKey',
    // The largest body the schema allows is under 5 KiB; an address over its limit is refused
    // only once the body is read (for the key's CORS), so that read stays small.
    bodyLimit: '8kb',
    body: WidgetSessionBody,
    response: WidgetSessionResponse,
    // 400 also for a missing, invalid or expired altcha; 409 for a replayed one; 429 past the
    // sessions per client address per key per hour (core/domain/widget/widget-limits.ts).
    errors: [401, 403, 404, 409],
    handler: async ({ services, body, koa }) => {
      const session = await openKeySession(services, {
        key: body.key,
        origin: originOf(koa.get('Origin')),
        address: koa.ip,
        agentId: body.agent_id,
        altcha: body.altcha,
      });
      koa.set('Cache-Control', 'no-store');
      return {
        token: session.token,
        expires_at: session.expiresAt.toISOString(),
        agent: session.agent,
        settings: session.settings,
      };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/widget/challenge',
    operationId: 'widgetChallenge',
    summary:
      'An ALTCHA proof-of-work challenge for a widget key, from a page on one of its allowed origins: solved, it goes into POST /api/widget/session as altcha (once; it expires after 5 minutes)',
    tag,
    auth: { kind: 'none' },
    addressLimited: true,
    cors: 'widgetKey',
    query: WidgetChallengeQuery,
    response: WidgetChallengeResponse,
    errors: [401, 403],
    handler: async ({ services, query, koa }) => {
      const doc = await keyForChallenge(services, query.key, originOf(koa.get('Origin')));
      const challenge = await issueChallenge(services, doc);
      koa.set('Cache-Control', 'no-store');
      return {
        algorithm: 'SHA-256' as const,
        challenge: challenge.challenge,
        maxnumber: challenge.maxnumber ?? CHALLENGE_MAX_NUMBER,
        salt: challenge.salt,
        signature: challenge.signature,
      };
    },
  }),
];
