import { Type } from '@sinclair/typebox';
import { Body, FirmSlug, Id, Timestamp } from '../../schemas/common.js';

export const CreateApiKeyBody = Body({
  firmSlug: FirmSlug,
  name: Type.String({ minLength: 1, maxLength: 200 }),
});

export const ListApiKeysQuery = Type.Object({ firmSlug: FirmSlug });
export const ApiKeyParams = Type.Object({ id: Id });

const ApiKeyFields = {
  id: Type.String(),
  firmSlug: Type.String(),
  name: Type.String(),
  key_prefix: Type.String({ description: 'The first characters of the key, to tell keys apart' }),
  created_at: Timestamp,
};

export const ApiKeyResponse = Type.Object(ApiKeyFields);
export const CreatedApiKeyResponse = Type.Object({
  ...ApiKeyFields,
  key: Type.String({ description: 'The key itself: shown once, stored only as a hash' }),
});
