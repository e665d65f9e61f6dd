import type { Static } from '@sinclair/typebox';
import type { ApiKeyDoc } from '../../../core/domain/access/api-keys.js';
import type { ApiKeyResponse } from './schema.js';

/** A key as the API shows it: never its secret, which only the create response carries. */
export function apiKeyView(doc: ApiKeyDoc): Static<typeof ApiKeyResponse> {
  return {
    id: doc._id,
    firmSlug: doc.firm,
    name: doc.name,
    key_prefix: doc.key_prefix,
    created_at: doc.created_at.toISOString(),
  };
}
