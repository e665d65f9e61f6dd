import { Type } from '@sinclair/typebox';
import { FirmSlug } from '../../schemas/common.js';

// GET /api/test-widget's query (docs/widget.md#query): all optional. Identifiers, the colour and the
// position are checked against their exact form (400 otherwise); title and greeting are free
// text, bounded, and escaped wherever the page shows them.
export const TestWidgetQuery = Type.Object({
  firmSlug: Type.Optional(FirmSlug),
  agentId: Type.Optional(
    Type.String({
      pattern: '^[A-Za-z0-9_-]{1,128}$',
      description: "One of the firm's agents (default: its newest)",
    }),
  ),
  title: Type.Optional(Type.String({ maxLength: 100, description: 'Widget title (default "Chat with us")' })),
  greeting: Type.Optional(
    Type.String({
      maxLength: 1000,
      description: 'First message shown in the widget, before the agent speaks',
    }),
  ),
  primaryColor: Type.Optional(
    Type.String({ pattern: '^#[0-9a-fA-F]{6}$', description: 'Widget colour, #rrggbb (default #1d4ed8)' }),
  ),
  position: Type.Optional(
    Type.Union([Type.Literal('left'), Type.Literal('right')], { description: 'Corner (default right)' }),
  ),
});

/** A widget file's version in its path: 16 hex digits of its content's SHA-256. */
export const WidgetFileParams = Type.Object({
  version: Type.String({ pattern: '^[0-9a-f]{16}$', description: 'The content version' }),
});
