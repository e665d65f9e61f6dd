import type { Static } from '@sinclair/typebox';
import { maskSettings } from '../../../core/domain/firms/firm-settings.js';
import type { FirmDoc } from '../../../core/domain/firms/firms.js';
import type { FirmResponse } from './schema.js';

export function firmView(firm: FirmDoc): Static<typeof FirmResponse> {
  return {
    slug: firm._id,
    name: firm.name,
    settings: maskSettings(firm.settings),
    created_at: firm.created_at.toISOString(),
    updated_at: firm.updated_at.toISOString(),
  };
}
