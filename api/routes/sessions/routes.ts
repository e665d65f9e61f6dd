import { requireFirm, requirePlatformKey } from '../../../core/domain/access/access.js';
import { PLATFORM_SESSIONS, revokeSessions } from '../../../core/domain/access/session-revocations.js';
import { defineRoute } from '../../route.js';
import { RevokeSessionsBody, RevokeSessionsResponse } from './schema.js';

const tag = 'Auth';

export const sessionRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/auth/revoke-sessions',
    operationId: 'revokeSessions',
    summary:
      "Revoke every session token of a firm issued up to now (platform key or session, or the firm's own " +
      'tokens); firmSlug "*" revokes the platform\'s own session tokens (platform key only). iat has whole ' +
      'seconds: tokens issued in the same second are revoked too, so sign in again a second later (from ' +
      'revoked_before). API keys are unaffected',
    tag,
    auth: { kind: 'token' },
    body: RevokeSessionsBody,
    response: RevokeSessionsResponse,
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      if (body.firmSlug === PLATFORM_SESSIONS) {
        // A platform session may not end its peers (nor outlive a stolen one's revocation): the key only.
        requirePlatformKey(principal, "Only the platform key may revoke the platform's session tokens.");
      } else {
        await requireFirm(services.mongo.db, principal, body.firmSlug);
      }
      const revokedBefore = await revokeSessions(services, body.firmSlug);
      return { firmSlug: body.firmSlug, revoked_before: revokedBefore.toISOString() };
    },
  }),
];
