import {
  KindGuard,
  Type,
  type TArray,
  type TLiteral,
  type TObject,
  type TOptional,
  type TSchema,
  type TUnion,
} from '@sinclair/typebox';
import {
  ClioOAuthState,
  ClioTokenCrm,
  DEFAULT_SETTINGS,
  FirmSettings,
  FirmSettingsInput,
  NoCrm,
  SECRET_MASK,
  isSecret,
} from '../../../core/domain/firms/firm-settings.js';
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

// How a read shows the stored settings (core/domain/firms/firm-settings.ts): their own schema,
// with every write-only value replaced by the mask (a string constant). Derived, not declared:
// a setting added to FirmSettings shows up here, and a new secret is masked here, by itself.

type TMask = TLiteral<typeof SECRET_MASK>;
const Mask = Type.Literal(SECRET_MASK, {
  description: `A write-only value that is set: reads show "${SECRET_MASK}", never the value`,
});

/** The schema a read shows for a stored value of schema T (Optional kept). */
type TShown<T extends TSchema> = T extends TOptional<infer S> ? TOptional<TShownValue<S>> : TShownValue<T>;
type TShownValue<T extends TSchema> = T extends { writeOnly: true }
  ? TMask
  : T extends TObject<infer P>
    ? TObject<{ [K in keyof P]: TShown<P[K]> }>
    : T extends TUnion<infer U>
      ? TUnion<TShownEach<U>>
      : T extends TArray<infer I>
        ? TArray<TShownValue<I>>
        : T;
type TShownEach<U extends TSchema[]> = U extends [infer H extends TSchema, ...infer R extends TSchema[]]
  ? [TShownValue<H>, ...TShownEach<R>]
  : [];

function shown<T extends TSchema>(schema: T): TShown<T> {
  const optional = <S extends TSchema>(s: S) => (KindGuard.IsOptional(schema) ? Type.Optional(s) : s);
  if (isSecret(schema)) return optional(Mask) as unknown as TShown<T>;
  // Copies keep everything else (options, `required`, TypeBox's own marks).
  if (KindGuard.IsObject(schema)) {
    const properties = Object.fromEntries(
      Object.entries(schema.properties).map(([key, property]) => [key, shown(property)]),
    );
    return { ...schema, properties } as unknown as TShown<T>;
  }
  if (KindGuard.IsUnion(schema)) return { ...schema, anyOf: schema.anyOf.map(shown) } as unknown as TShown<T>;
  if (KindGuard.IsArray(schema)) return { ...schema, items: shown(schema.items) } as unknown as TShown<T>;
  return schema as unknown as TShown<T>;
}

/** A Clio connected with OAuth, as a read shows it: {provider, region, status, connected_at}, no token. */
export const ClioOAuthView = Type.Object(
  { provider: Type.Literal('clio'), ...ClioOAuthState.properties },
  { additionalProperties: false },
);

/** The properties of a schema, each setting with a default showing it (from DEFAULT_SETTINGS, where they are set). */
function withDefaults<P extends Record<string, TSchema>>(properties: P): P {
  const defaults: Record<string, unknown> = DEFAULT_SETTINGS;
  return Object.fromEntries(
    Object.entries(properties).map(([key, schema]) => [
      key,
      key in defaults ? { ...schema, default: defaults[key] } : schema,
    ]),
  ) as P;
}

/** The settings of a read: each stored setting (defaults filled in), write-only values masked. */
export const FirmSettingsView = Type.Object(
  withDefaults({
    ...shown(FirmSettings).properties,
    crm: Type.Union([shown(ClioTokenCrm), ClioOAuthView, NoCrm]),
  }),
  {
    additionalProperties: false,
    description: `The firm's settings, defaults filled in; write-only values (secrets) show as "${SECRET_MASK}"`,
  },
);

export const FirmResponse = Type.Object({
  slug: Type.String(),
  name: Type.String(),
  settings: FirmSettingsView,
  created_at: Timestamp,
  updated_at: Timestamp,
});
