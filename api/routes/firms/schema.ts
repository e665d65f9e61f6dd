import { Type } from '@sinclair/typebox';
import { FirmSettingsInput } from '../../../core/domain/firms/firm-settings.js';
import { Body, FirmSlug, Timestamp } from '../../schemas/common.js';

export const CreateFirmBody = Body({
  slug: FirmSlug,
  name: Type.String({ minLength: 1, maxLength: 200 }),
  settings: Type.Optional(FirmSettingsInput),
});

export const PatchFirmBody = Body({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  settings: Type.Optional(FirmSettingsInput),
});

export const FirmParams = Type.Object({ slug: FirmSlug });

export const FirmResponse = Type.Object({
  slug: Type.String(),
  name: Type.String(),
  settings: Type.Record(Type.String(), Type.Unknown(), {
    description: 'Settings; secrets show as "********"',
  }),
  created_at: Timestamp,
  updated_at: Timestamp,
});
