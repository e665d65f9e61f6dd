import type { Static } from '@sinclair/typebox';
import type { WidgetKeyDoc } from '../../../core/domain/widget/widget-keys.js';
import type { WidgetKeyResponse } from './schema.js';

/** A widget key as the API shows it, the publishable key included (the snippet carries it). */
export function widgetKeyView(doc: WidgetKeyDoc): Static<typeof WidgetKeyResponse> {
  return {
    id: doc._id,
    firmSlug: doc.firm,
    name: doc.name,
    key: doc.key,
    allowed_origins: doc.allowed_origins,
    agent_id: doc.agent_id,
    challenge: doc.challenge,
    created_at: doc.created_at.toISOString(),
    updated_at: doc.updated_at.toISOString(),
  };
}
