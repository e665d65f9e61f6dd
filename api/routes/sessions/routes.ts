import { requireFirm } from '../../../core/domain/access/access.js';
import { revokeSessions } from '../../../core/domain/access/session-revocations.js';
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
      'tokens). iat has whole seconds: tokens issued in the same second are revoked too, so sign in again a ' +
      'second later (from revoked_before). Firm API keys are unaffected; platform sessions (firm "*") are ' +
      'bounded by the 24-hour session lifetime instead',
    tag,
    auth: { kind: 'token' },
    body: RevokeSessionsBody,
    response: RevokeSessionsResponse,
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      await requireFirm(services.mongo.db, principal, body.firmSlug);
      const revokedBefore = await revokeSessions(services, body.firmSlug);
      return { firmSlug: body.firmSlug, revoked_before: revokedBefore.toISOString() };
    },
  }),
];
