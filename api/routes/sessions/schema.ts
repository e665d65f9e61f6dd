import { Type } from '@sinclair/typebox';
import { FIRM_SLUG_PATTERN } from '../../../core/domain/firms/firm-slug.js';
import { Body } from '../../schemas/common.js';

export const RevokeSessionsBody = Body({
  firmSlug: Type.String({
    pattern: `^\\*$|${FIRM_SLUG_PATTERN}`,
    maxLength: 63,
    description: 'Firm slug, or "*" for the platform\'s own session tokens (platform key only)',
  }),
});

export const RevokeSessionsResponse = Type.Object({
  firmSlug: Type.String(),
  revoked_before: Type.String({
    format: 'date-time',
    description:
      'Session tokens of the firm whose iat is earlier are refused (all those issued up to the call, ' +
      'whose second it rounds up to); a client signs in again from this time on',
  }),
});
