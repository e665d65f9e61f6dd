import { Type } from '@sinclair/typebox';
import { requireListFirm } from '../../../core/domain/access/access.js';
import {
  EXTRACT_FIELDS,
  MAX_EXTRACT_CHARS,
  extractFromText,
  pickFields,
} from '../../../core/domain/intake/text-extraction.js';
import { URGENCY_VALUES } from '../../../core/integrations/chat/openai-extractor.js';
import { Body, ListFirmSlug } from '../../schemas/common.js';
import { defineRoute } from '../../route.js';

const Nullable = (description: string) =>
  Type.Optional(Type.Union([Type.String(), Type.Null()], { description }));

const ExtractBody = Body({
  firmSlug: ListFirmSlug,
  text: Type.String({
    minLength: 1,
    maxLength: MAX_EXTRACT_CHARS,
    description: `A note, an email or a transcript ("Agent: …" / "User: …" lines, or plain text), at most ${MAX_EXTRACT_CHARS.toLocaleString('en-US')} characters`,
  }),
  fields: Type.Optional(
    Type.Array(Type.Union(EXTRACT_FIELDS.map((f) => Type.Literal(f))), {
      minItems: 1,
      maxItems: EXTRACT_FIELDS.length,
      uniqueItems: true,
      description: 'Only these keys of the answer (default: all of them); another name is a 400',
    }),
  ),
});

const ExtractResponse = Type.Object(
  {
    name: Nullable('The full name, as given'),
    first_name: Nullable('First name'),
    last_name: Nullable('Last name'),
    phone: Nullable('E.164'),
    email: Nullable('Trimmed and lower-cased'),
    case_type: Nullable('A practice area when recognised, else the words used'),
    urgency: Type.Optional(Type.Union(URGENCY_VALUES.map((u) => Type.Literal(u)))),
    summary: Type.Optional(Type.String({ description: 'One short paragraph' })),
  },
  { description: 'Every key unless `fields` named some' },
);

export const utilRoutes = [
  defineRoute({
    method: 'POST',
    path: '/api/utils/extract',
    operationId: 'extractFromText',
    summary:
      "Extract a person's name, phone, email, case type, urgency and a summary from a text, with the extractor the call pipeline uses (in time linear in the text)",
    tag: 'Utilities',
    auth: { kind: 'token' },
    body: ExtractBody,
    response: ExtractResponse,
    errors: [403, 404],
    handler: async ({ services, principal, body }) => {
      // Firm-scoped like every route: a firm token acts for its own firm, the platform key names one.
      const firm = await requireListFirm(services.mongo.db, principal, body.firmSlug);
      return pickFields(await extractFromText(services, firm._id, body.text), body.fields);
    },
  }),
];
