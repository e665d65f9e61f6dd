import { Type } from '@sinclair/typebox';
import { Body, FirmSlug } from '../../schemas/common.js';

export const RevokeSessionsBody = Body({ firmSlug: FirmSlug });

export const RevokeSessionsResponse = Type.Object({
  firmSlug: Type.String(),
  revoked_before: Type.String({
    format: 'date-time',
    description:
      'Session tokens of the firm whose iat is earlier are refused (all those issued up to the call, ' +
      'whose second it rounds up to); a client signs in again from this time on',
  }),
});
