import { Type } from '@sinclair/typebox';
import { Body, FirmSlug, Id } from '../../schemas/common.js';

export const SyncContactsBody = Body({
  firmSlug: FirmSlug,
  source: Type.Union([Type.Literal('clio'), Type.Literal('ringcentral')], {
    description:
      'Where the contacts come from: "clio" (the firm’s Clio Manage) or "ringcentral" (the address book of the firm’s RingCentral)',
  }),
  defaultCountry: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z]{2}$',
      description: 'ISO 3166-1 alpha-2 country of phone numbers written without a country code; default US',
    }),
  ),
});

export const SyncAccepted = Type.Object({ job_id: Type.String() });

export const SyncJobParams = Type.Object({ job_id: Id });

export const SyncJobResponse = Type.Object({
  job_id: Type.String(),
  status: Type.Union([Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed')]),
  pages: Type.Integer({ minimum: 0, description: 'Pages of Clio contacts read and stored so far' }),
  imported: Type.Integer({ minimum: 0 }),
  duplicates: Type.Integer({
    minimum: 0,
    description: 'Persons whose phone or email a contact of the firm already has (as in an import)',
  }),
  errors: Type.Integer({ minimum: 0, description: 'Persons an import would refuse (an invalid phone, ...)' }),
  deleted: Type.Optional(
    Type.Integer({
      minimum: 0,
      description: 'RingCentral: contacts its incremental sync said were removed (marked deleted_at)',
    }),
  ),
  updated: Type.Optional(
    Type.Integer({
      minimum: 0,
      description:
        'RingCentral: stored contacts its incremental sync said changed (names and company updated)',
    }),
  ),
  message: Type.Optional(Type.String({ description: 'Why a failed sync failed' })),
});
