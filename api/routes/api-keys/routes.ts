import { Type } from '@sinclair/typebox';
import { requireFirm, requireListFirm } from '../../../core/domain/access/access.js';
import { createApiKey, listApiKeys, revokeApiKey } from '../../../core/domain/access/api-keys.js';
import { defineRoute } from '../../route.js';
import { apiKeyView } from './present.js';
import {
  ApiKeyParams,
  ApiKeyResponse,
  CreateApiKeyBody,
  CreatedApiKeyResponse,
  ListApiKeysQuery,
} from './schema.js';

const tag = 'Auth';

export const apiKeyRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/auth/api-keys',
    operationId: 'createApiKey',
    summary: 'Issue a firm API key (platform key); the key is in this response only',
    tag,
    auth: { kind: 'platform' },
    body: CreateApiKeyBody,
    response: CreatedApiKeyResponse,
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      await requireFirm(services.mongo.db, principal, body.firmSlug);
      const { doc, key } = await createApiKey(services.mongo.db, body.firmSlug, body.name);
      return { ...apiKeyView(doc), key };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/api/auth/api-keys',
    operationId: 'listApiKeys',
    summary: 'List API keys of a firm, without secrets (platform key)',
    tag,
    auth: { kind: 'platform' },
    query: ListApiKeysQuery,
    response: Type.Array(ApiKeyResponse),
    errors: [403, 404],
    handler: async ({ services, principal, query }) => {
      const firm = await requireListFirm(services.mongo.db, principal, query.firmSlug);
      return (await listApiKeys(services.mongo.db, firm._id)).map(apiKeyView);
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/api/auth/api-keys/{id}',
    operationId: 'revokeApiKey',
    summary: 'Revoke an API key: it stops working at once (platform key)',
    tag,
    auth: { kind: 'platform' },
    params: ApiKeyParams,
    response: Type.Object({ id: Type.String(), revoked: Type.Boolean() }),
    errors: [403, 404],
    handler: async ({ services, params }) => {
      await revokeApiKey(services.mongo.db, params.id);
      return { id: params.id, revoked: true };
    },
  }),
];
