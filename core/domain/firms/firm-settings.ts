import {
  Type,
  type Static,
  type TNull,
  type TObject,
  type TOptional,
  type TOptionalWithFlag,
  type TProperties,
  type TSchema,
  type TUnion,
} from '@sinclair/typebox';
import { forbidden, invalidRequest, type ErrorDetail } from '../../platform/errors.js';
import { urlNotAllowedReason, type UrlPolicy } from '../../platform/url-policy.js';
import { CLIO_REGIONS } from '../../integrations/crm/clio-oauth.js';
import { isKnownCountry } from '../contact-points/phones.js';

// Firm settings (docs/authentication.md#firm-settings), declared once: `FirmSettings` below is the
// schema of the stored settings, and everything else is derived from it — the TypeScript type
// every reader uses (Static), the request schema (`FirmSettingsInput`: each setting nullable,
// null removing it) and the response schema (api/routes/firms/schema.ts: each write-only value
// shown as SECRET_MASK). A setting removed here stops compiling wherever it is read.
//
// Secrets are write-only (`Secret`): reads show SECRET_MASK, and sending the mask back in a PATCH
// keeps the stored value — but not when the URL the secret is sent to changes (crm.base_url needs
// crm.access_token again). URLs the service calls must pass the URL policy
// (core/platform/url-policy.ts) when they are stored, and again when they are called.

/** What a read shows in place of a stored secret; sent back, it keeps the secret. */
export const SECRET_MASK = '********';
export const E164_PATTERN = '^\\+[1-9]\\d{6,14}$';
const HHMM = '^(?:[01]\\d|2[0-3]):[0-5]\\d$';

/** A schema marked write-only: accepted in requests and stored, never shown. */
export type TSecret<T extends TSchema = TSchema> = T & { writeOnly: true };

/** A secret: `writeOnly` in the OpenAPI document, shown as SECRET_MASK by every read. */
const Secret = <T extends TSchema>(schema: T): TSecret<T> => ({
  ...schema,
  writeOnly: true,
  description: `Write-only: reads show "${SECRET_MASK}", and sending "${SECRET_MASK}" back keeps the stored value`,
});

/** Is this (property) schema a secret? */
export const isSecret = (schema: TSchema): boolean => schema.writeOnly === true;

/** Clio with a pasted access token (docs/clio.md). */
export const ClioTokenCrm = Type.Object(
  {
    provider: Type.Literal('clio'),
    access_token: Secret(Type.String({ minLength: 1, maxLength: 4096 })),
    base_url: Type.Optional(
      Type.String({
        format: 'uri',
        maxLength: 2048,
        description: 'https:// to a public host; changing it requires sending access_token again',
      }),
    ),
    region: Type.Optional(
      Type.KeyOf(Type.Const(CLIO_REGIONS), {
        description:
          'The Clio region whose host the token belongs to (us, the default, eu, ca, au); base_url, when set, wins. Changing it requires sending access_token again',
      }),
    ),
  },
  { additionalProperties: false },
);

export const NoCrm = Type.Object({ provider: Type.Literal('none') }, { additionalProperties: false });

/**
 * A Clio connected with OAuth (docs/clio.md#connected-with-oauth): its tokens are kept apart
 * (clio_connections), never here. Set only by the OAuth callback and a refused refresh.
 */
export const ClioOAuthState = Type.Object(
  {
    region: Type.KeyOf(Type.Const(CLIO_REGIONS)),
    status: Type.Union([Type.Literal('connected'), Type.Literal('reconnect_required')]),
    connected_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type ClioOAuthState = Static<typeof ClioOAuthState>;

const ClioOAuthCrm = Type.Object(
  { provider: Type.Literal('clio'), oauth: ClioOAuthState },
  { additionalProperties: false },
);

// A calendar booking provider (docs/appointments.md): Cal.com's API v2 with the firm's API key.
const BookingSettings = Type.Object(
  {
    provider: Type.Literal('calcom'),
    api_key: Secret(Type.String({ minLength: 1, maxLength: 512 })),
    event_type_id: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }),
    base_url: Type.Optional(
      Type.String({
        format: 'uri',
        maxLength: 2048,
        description:
          'https:// to a public host (default https://api.cal.com); changing it requires sending api_key again',
      }),
    ),
  },
  { additionalProperties: false },
);
export type BookingProviderSettings = Static<typeof BookingSettings>;

const CallingWindow = Type.Object(
  {
    start: Type.String({ pattern: HHMM }),
    end: Type.String({ pattern: HHMM }),
    days: Type.Array(Type.Integer({ minimum: 1, maximum: 7 }), {
      minItems: 1,
      maxItems: 7,
      uniqueItems: true,
    }),
  },
  { additionalProperties: false },
);

/** The campaign kill switch's thresholds when a firm's settings say nothing (docs/campaigns.md#kill-switch). */
export const KILL_SWITCH_DEFAULTS = {
  /** More than this share of the window's ended calls opting out pauses the campaign. */
  opt_out_share: 0.05,
  /** The window of ended calls: the campaign's last N. */
  window_calls: 40,
  /** More than this share of the window's dial attempts failing pauses the campaign. */
  failure_share: 0.5,
  /** The window of dial attempts: the campaign's last N. */
  window_dials: 20,
} as const;

/** The longest window a firm may set (and what each window keeps). */
export const MAX_KILL_WINDOW = 1000;

const Share = (what: string, fallback: number) =>
  Type.Optional(
    Type.Number({
      minimum: 0,
      maximum: 1,
      description: `${what} (0 to 1; default ${fallback}); 1 never pauses`,
    }),
  );
const KillWindow = (what: string, fallback: number) =>
  Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_KILL_WINDOW,
      description: `${what} (1 to ${MAX_KILL_WINDOW}; default ${fallback})`,
    }),
  );

const CampaignKillSwitch = Type.Object(
  {
    opt_out_share: Share(
      'A running campaign pauses when more than this share of window_calls opted out among its last window_calls ended calls',
      KILL_SWITCH_DEFAULTS.opt_out_share,
    ),
    window_calls: KillWindow('The ended calls the opt-out share is of', KILL_SWITCH_DEFAULTS.window_calls),
    failure_share: Share(
      'A running campaign pauses when more than this share of window_dials failed among its last window_dials dial attempts',
      KILL_SWITCH_DEFAULTS.failure_share,
    ),
    window_dials: KillWindow('The dial attempts the failure share is of', KILL_SWITCH_DEFAULTS.window_dials),
  },
  {
    additionalProperties: false,
    description:
      'The campaign kill switch (docs/campaigns.md#kill-switch): each absent field its default; a PATCH replaces the whole object',
  },
);

/**
 * A firm's settings as stored (and as every reader sees them, defaults filled in by
 * `withDefaults`): the settings with a default are required, the others optional.
 */
export const FirmSettings = Type.Object(
  {
    timezone: Type.String({ format: 'iana-time-zone' }),
    notification_emails: Type.Array(Type.String({ format: 'email', maxLength: 320 }), { maxItems: 50 }),
    slack_webhook_url: Type.Optional(
      Type.String({ format: 'uri', maxLength: 2048, description: 'https:// to a public host' }),
    ),
    crm: Type.Union([ClioTokenCrm, ClioOAuthCrm, NoCrm]),
    /** The calendar booking provider; absent: none (409 booking_not_configured). */
    booking: Type.Optional(BookingSettings),
    voice_webhook_secret: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 512 }))),
    booking_webhook_secret: Type.Optional(Secret(Type.String({ minLength: 1, maxLength: 512 }))),
    from_number: Type.Optional(Type.String({ pattern: E164_PATTERN })),
    max_concurrent_calls: Type.Integer({ minimum: 1, maximum: 1000 }),
    calling_window: Type.Optional(CallingWindow),
    /** Retired: accepted and kept, so firms that set it are not refused; it decides nothing. */
    inquiry_consent_days: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3650,
        description:
          'Retired (2026-12-02): an inquiry no longer counts as consent to marketing calls at any age, since a marketing call in an AI voice needs written consent; accepted and kept, it decides nothing (docs/compliance.md#consent)',
      }),
    ),
    reminder_offsets_minutes: Type.Array(Type.Integer({ minimum: 0, maximum: 60 * 24 * 60 }), {
      maxItems: 10,
      uniqueItems: true,
    }),
    allowed_call_countries: Type.Array(Type.String({ pattern: '^[A-Z]{2}$' }), {
      maxItems: 250,
      uniqueItems: true,
      description:
        'ISO 3166-1 alpha-2 codes of the countries the firm may dial (default ["US", "CA"]); a firm token ' +
        'may only narrow it (403 when it adds a country), the platform adds countries',
    }),
    /** Absent: DEFAULT_WIDGET_DAILY_MESSAGE_CAP. */
    widget_daily_message_cap: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10_000_000,
        description:
          "Messages the firm's widget visitors may send per UTC day, all chats together (default 5000; past it 429); a firm token may lower it, only the platform raise it",
      }),
    ),
    /** Absent: the platform's WIDGET_DAILY_BOOKING_CAP. */
    widget_daily_booking_cap: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000,
        description:
          "Consultations the firm's widget chats may book per UTC day, all visitors together (default the platform's WIDGET_DAILY_BOOKING_CAP; past it the chat books nothing and says the firm will call); a firm token may lower it, only the platform raise it",
      }),
    ),
    /** Absent: the platform's OPENAI_DAILY_CHARS_PER_FIRM. */
    openai_daily_char_budget: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000_000_000,
        description:
          "Characters the firm's extractions may send to OpenAI per UTC day (default the platform's OPENAI_DAILY_CHARS_PER_FIRM; past it the deterministic extractor answers); a firm token may lower it, only the platform raise it",
      }),
    ),
    /** Premium-rate and shared-cost destinations allowed (platform-only); absent: refused. */
    allow_premium_numbers: Type.Optional(
      Type.Boolean({
        description:
          'Whether the firm may dial premium-rate and shared-cost numbers (default false); only the ' +
          'platform may turn it on (403 for a firm token)',
      }),
    ),
    /** Absent: KILL_SWITCH_DEFAULTS. */
    campaign_kill_switch: Type.Optional(CampaignKillSwitch),
    /** Absent: no missed call is called back (docs/ringcentral.md#missed-call-callbacks). */
    missed_call_callback: Type.Optional(
      Type.Object(
        {
          enabled: Type.Boolean({
            description: 'Whether missed calls from the phone system are called back',
          }),
          agent_id: Type.String({
            minLength: 1,
            maxLength: 200,
            description: "The firm's agent that calls back",
          }),
          delay_seconds: Type.Optional(
            Type.Integer({
              minimum: 0,
              maximum: 3600,
              description: 'Seconds after the missed call that the callback is placed (default 60)',
            }),
          ),
          exclude_known_clients: Type.Optional(
            Type.Boolean({
              description:
                "Whether the firm's known clients (synced contacts) are not called back (default false)",
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'Missed calls on the firm’s phone system (RingCentral) called back by an agent: at most one callback per caller per 4 hours, through every rule a direct call obeys',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type FirmSettings = Static<typeof FirmSettings>;

/** Each property of `P` optional and nullable: what a request may send (null removes a setting). */
type TWritable<P extends TProperties> = TObject<{
  [K in keyof P]: TOptional<TUnion<[TOptionalWithFlag<P[K], false>, TNull]>>;
}>;

function writable<P extends TProperties>(properties: P): TWritable<P> {
  const fields = Object.fromEntries(
    Object.entries(properties).map(([key, schema]) => [
      key,
      Type.Optional(
        Type.Union([Type.Optional(schema, false), Type.Null()], isSecret(schema) ? { writeOnly: true } : {}),
      ),
    ]),
  );
  return Type.Object(fields, { additionalProperties: false }) as unknown as TWritable<P>;
}

/**
 * The settings a request may send: every stored setting, optional, null removing it (PATCH) —
 * except that crm is a token or none (a Clio connected with OAuth comes only from its callback).
 */
export const FirmSettingsInput = writable({
  ...FirmSettings.properties,
  crm: Type.Union([ClioTokenCrm, NoCrm]),
});
export type FirmSettingsInput = Static<typeof FirmSettingsInput>;

export const DEFAULT_SETTINGS: FirmSettings = {
  timezone: 'America/New_York',
  notification_emails: [],
  crm: { provider: 'none' },
  max_concurrent_calls: 5,
  reminder_offsets_minutes: [1440, 60],
  allowed_call_countries: ['US', 'CA'],
};

/** What a firm's widget visitors may send per UTC day when its settings do not say (docs/widget.md#limits). */
export const DEFAULT_WIDGET_DAILY_MESSAGE_CAP = 5000;

/** The settings that are secrets themselves (secrets inside a setting, like crm.access_token, are kept by hand below). */
const SECRET_KEYS = Object.entries(FirmSettings.properties)
  .filter(([, schema]) => isSecret(schema))
  .map(([key]) => key as keyof FirmSettings);

/**
 * Applies a settings input on top of stored settings: null removes (back to default), the mask
 * keeps. Checks what the schema cannot: URLs against the URL policy (400 url_not_allowed),
 * country codes against libphonenumber's list.
 */
export function mergeSettings(
  current: FirmSettings,
  input: FirmSettingsInput,
  urlPolicy: UrlPolicy,
): FirmSettings {
  checkUrls(input, urlPolicy);
  checkCountries(input);
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (value === null) {
      const fallback = (DEFAULT_SETTINGS as unknown as Record<string, unknown>)[key];
      if (fallback === undefined) delete next[key];
      else next[key] = fallback;
      continue;
    }
    if ((SECRET_KEYS as string[]).includes(key) && value === SECRET_MASK) {
      if (current[key as keyof FirmSettings] === undefined) throw maskWithoutSecret(`/settings/${key}`);
      continue;
    }
    if (
      key === 'crm' &&
      typeof value === 'object' &&
      'access_token' in value &&
      value.access_token === SECRET_MASK
    ) {
      if (current.crm.provider !== 'clio' || !('access_token' in current.crm))
        throw maskWithoutSecret('/settings/crm/access_token');
      // The stored token may only go where it went before: a new base_url or region (another
      // host) needs the token itself.
      if (
        (value.base_url ?? null) !== (current.crm.base_url ?? null) ||
        (value.region ?? 'us') !== (current.crm.region ?? 'us')
      ) {
        throw invalidRequest(
          'Changing settings.crm.base_url or settings.crm.region requires sending settings.crm.access_token again, not the mask.',
          [
            {
              path: '/settings/crm/access_token',
              message: 'must be the token itself when base_url or region changes',
            },
          ],
        );
      }
      next.crm = { ...value, access_token: current.crm.access_token };
      continue;
    }
    if (
      key === 'booking' &&
      typeof value === 'object' &&
      'api_key' in value &&
      value.api_key === SECRET_MASK
    ) {
      if (current.booking === undefined) throw maskWithoutSecret('/settings/booking/api_key');
      // As for crm: the stored key may only go where it went before.
      if ((value.base_url ?? null) !== (current.booking.base_url ?? null)) {
        throw invalidRequest(
          'Changing settings.booking.base_url requires sending settings.booking.api_key again, not the mask.',
          [{ path: '/settings/booking/api_key', message: 'must be the key itself when base_url changes' }],
        );
      }
      next.booking = { ...value, api_key: current.booking.api_key };
      continue;
    }
    next[key] = value;
  }
  return next as unknown as FirmSettings;
}

/** 400 url_not_allowed for a URL the service would call that the policy refuses. */
function checkUrls(input: FirmSettingsInput, policy: UrlPolicy): void {
  const urls: Array<[string, string]> = [];
  if (typeof input.slack_webhook_url === 'string')
    urls.push(['/settings/slack_webhook_url', input.slack_webhook_url]);
  if (input.crm?.provider === 'clio' && input.crm.base_url !== undefined)
    urls.push(['/settings/crm/base_url', input.crm.base_url]);
  if (typeof input.booking?.base_url === 'string')
    urls.push(['/settings/booking/base_url', input.booking.base_url]);
  const details: ErrorDetail[] = [];
  for (const [path, url] of urls) {
    const reason = urlNotAllowedReason(url, policy);
    if (reason !== null) details.push({ path, message: reason });
  }
  if (details.length > 0) {
    throw invalidRequest(
      `The service will not call this URL (only https:// to a public host): ${details.map((d) => `${d.path} ${d.message}`).join('; ')}.`,
      details,
      'url_not_allowed',
    );
  }
}

/** 400 for a country code libphonenumber does not know (the schema checks the form). */
function checkCountries(input: FirmSettingsInput): void {
  const codes = input.allowed_call_countries ?? [];
  const details: ErrorDetail[] = codes.flatMap((code, i) =>
    isKnownCountry(code)
      ? []
      : [
          {
            path: `/settings/allowed_call_countries/${i}`,
            message: 'is not a known ISO 3166-1 alpha-2 country',
          },
        ],
  );
  if (details.length > 0) {
    throw invalidRequest(
      `settings.allowed_call_countries has codes that are not known countries: ${details.length} of them.`,
      details,
    );
  }
}

/**
 * Toll fraud (docs/authentication.md#firm-settings): what a firm may dial is the platform's to
 * widen. A firm token may narrow allowed_call_countries or turn allow_premium_numbers off, never
 * add a country or turn it on, and may lower widget_daily_message_cap, widget_daily_booking_cap and
 * openai_daily_char_budget,
 * never raise them: 403 naming
 * each such field. (null counts as the default it restores.)
 */
export function refuseWidening(
  current: FirmSettings,
  input: FirmSettingsInput,
  /** The platform's defaults of the settings a firm may only lower. */
  defaults: { openaiDailyChars: number; widgetDailyBookings: number },
): void {
  const details: ErrorDetail[] = [];
  if (input.allowed_call_countries !== undefined) {
    const next = input.allowed_call_countries ?? DEFAULT_SETTINGS.allowed_call_countries;
    // Unknown codes are no country: mergeSettings answers them with 400, as for any token.
    const added = next.filter(
      (code) => isKnownCountry(code) && !current.allowed_call_countries.includes(code),
    );
    if (added.length > 0) {
      details.push({
        path: '/settings/allowed_call_countries',
        message: `adds ${added.slice(0, 10).join(', ')}${added.length > 10 ? ', …' : ''}; only the platform may add countries`,
      });
    }
  }
  if (input.allow_premium_numbers === true && current.allow_premium_numbers !== true) {
    details.push({
      path: '/settings/allow_premium_numbers',
      message: 'only the platform may allow premium-rate and shared-cost numbers',
    });
  }
  // Each bounds what others make the platform do for the firm: its widget's visitors the chat
  // engine (the platform's LLM), anonymous visitors its calendar (and Cal.com's mail), the firm
  // itself what the platform spends at OpenAI.
  const lowerOnly = [
    ['widget_daily_message_cap', DEFAULT_WIDGET_DAILY_MESSAGE_CAP, 'cap'],
    ['widget_daily_booking_cap', defaults.widgetDailyBookings, 'cap'],
    ['openai_daily_char_budget', defaults.openaiDailyChars, 'budget'],
  ] as const;
  for (const [name, fallback, noun] of lowerOnly) {
    if (input[name] === undefined) continue;
    const next = input[name] ?? fallback;
    const now = current[name] ?? fallback;
    if (next > now) {
      details.push({
        path: `/settings/${name}`,
        message: `raises the ${noun} from ${now}; only the platform may raise it`,
      });
    }
  }
  if (details.length > 0) {
    throw forbidden(
      'A firm token may narrow what its firm may do, not widen it; ask the platform to add countries, allow premium numbers, or raise a widget cap or the OpenAI budget.',
      details,
    );
  }
}

/** Stored settings with the defaults of settings added since the firm was last written. */
export function withDefaults(settings: FirmSettings): FirmSettings {
  return { ...DEFAULT_SETTINGS, ...settings };
}

/** The mask stands for a stored secret; with none stored there is nothing to keep, so say so. */
function maskWithoutSecret(path: string) {
  return invalidRequest(
    `${path} is "${SECRET_MASK}" but no secret is stored there; send the secret itself.`,
    [{ path, message: `is the mask "${SECRET_MASK}" but no secret is stored` }],
  );
}
