import { openSettings } from '../../core/domain/firms/firm-secrets.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FirmSettings } from '../../core/domain/firms/firm-settings.js';
import { setFirmCrm } from '../../core/domain/firms/firms.js';
import { changeCached } from '../../core/platform/db/read-cache.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { holdLock, landsWithin } from '../helpers/held-lock.js';
import { documentedResponses } from '../helpers/documented-response.js';
import { expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

const MASK = '********';
/** The settings as stored, their sealed secrets opened (docs/operations.md#secrets-at-rest). */
const stored = async (slug: string): Promise<any> =>
  openSettings(
    stack.services.mongo.db,
    slug,
    (await stack.services.mongo.db.collection('firms').findOne({ _id: slug as never }))!.settings,
  );

describe('firms', () => {
  it('creates a firm with the default settings', async () => {
    const slug = `f-${rand(4)}`;
    const res = await stack.admin.post('/api/firms', { slug, name: 'Default Law' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      slug,
      name: 'Default Law',
      settings: {
        timezone: 'America/New_York',
        notification_emails: [],
        crm: { provider: 'none' },
        max_concurrent_calls: 5,
        reminder_offsets_minutes: [1440, 60],
        allowed_call_countries: ['US', 'CA'],
      },
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const read = await stack.admin.get(`/api/firms/${slug}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it('refuses the name of an operation under /api/v2/ as a slug (its /api/v2/{firm}/ paths would be the operation’s)', async () => {
    const res = await stack.admin.post('/api/firms', { slug: 'get-call', name: 'Shadowed Law' });
    expect(expectError(res, 400, 'invalid_request')).toEqual([{ path: '/slug', message: 'is reserved' }]);
    expect(
      await stack.services.mongo.db.collection('firms').findOne({ _id: 'get-call' as never }),
    ).toBeNull();
  });

  it('a firm key reads and renames its own firm', async () => {
    const firm = await createFirm(stack);
    const patched = await firm.client.patch(`/api/firms/${firm.slug}`, { name: 'Renamed LLP' });
    expect(patched.status).toBe(200);
    expect(patched.body.name).toBe('Renamed LLP');
    expect((await firm.client.get(`/api/firms/${firm.slug}`)).body.name).toBe('Renamed LLP');
  });
});

describe('firm settings: secrets are write-only', () => {
  const secrets = {
    voice_webhook_secret: `voice-${rand(8)}`,
    booking_webhook_secret: `booking-${rand(8)}`,
    crmToken: `clio-${rand(8)}`,
    bookingKey: `cal-${rand(8)}`,
  };
  let slug: string;
  let firmClient: Awaited<ReturnType<typeof createFirm>>['client'];

  beforeAll(async () => {
    const firm = await createFirm(stack, {
      timezone: 'Europe/Berlin',
      notification_emails: ['intake@example.com'],
      slack_webhook_url: 'https://hooks.slack.example/services/T/B/X',
      voice_webhook_secret: secrets.voice_webhook_secret,
      booking_webhook_secret: secrets.booking_webhook_secret,
      crm: { provider: 'clio', access_token: secrets.crmToken, base_url: 'https://clio.example' },
      booking: { provider: 'calcom', api_key: secrets.bookingKey, event_type_id: 42 },
      from_number: '+15551230000',
      max_concurrent_calls: 3,
      calling_window: { start: '09:00', end: '17:00', days: [1, 2, 3, 4, 5] },
      reminder_offsets_minutes: [120],
    });
    slug = firm.slug;
    firmClient = firm.client;
  });

  const expectNoSecretIn = (text: string) => {
    for (const secret of Object.values(secrets)) expect(text).not.toContain(secret);
  };

  it('stores the secrets and shows them only as "********", to the platform and to the firm', async () => {
    // Sealed as stored (docs/operations.md#secrets-at-rest); opened, they are the ones sent.
    const raw = JSON.stringify(
      await stack.services.mongo.db.collection('firms').findOne({ _id: slug as never }),
    );
    expectNoSecretIn(raw);
    const settings = await stored(slug);
    expect(settings.voice_webhook_secret).toBe(secrets.voice_webhook_secret);
    expect(settings.booking_webhook_secret).toBe(secrets.booking_webhook_secret);
    expect(settings.crm.access_token).toBe(secrets.crmToken);
    expect(settings.booking.api_key).toBe(secrets.bookingKey);

    for (const client of [stack.admin, firmClient]) {
      const res = await client.get(`/api/firms/${slug}`);
      expect(res.status).toBe(200);
      expectNoSecretIn(res.text);
      expect(res.body.settings).toEqual({
        timezone: 'Europe/Berlin',
        notification_emails: ['intake@example.com'],
        slack_webhook_url: 'https://hooks.slack.example/services/T/B/X',
        voice_webhook_secret: MASK,
        booking_webhook_secret: MASK,
        crm: { provider: 'clio', access_token: MASK, base_url: 'https://clio.example' },
        booking: { provider: 'calcom', api_key: MASK, event_type_id: 42 },
        from_number: '+15551230000',
        max_concurrent_calls: 3,
        calling_window: { start: '09:00', end: '17:00', days: [1, 2, 3, 4, 5] },
        reminder_offsets_minutes: [120],
        allowed_call_countries: ['US', 'CA'],
      });
    }
  });

  it('the create response masks them too', async () => {
    const res = await stack.admin.post('/api/firms', {
      slug: `f-${rand(4)}`,
      name: 'Secretive',
      settings: { voice_webhook_secret: secrets.voice_webhook_secret },
    });
    expect(res.status).toBe(200);
    expect(res.body.settings.voice_webhook_secret).toBe(MASK);
    expectNoSecretIn(res.text);
  });

  it('PATCH with the mask keeps every stored secret', async () => {
    // (The mask keeps the Clio token only for the same base_url: test/hardening/url-policy.test.ts.)
    const res = await firmClient.patch(`/api/firms/${slug}`, {
      settings: {
        voice_webhook_secret: MASK,
        booking_webhook_secret: MASK,
        crm: { provider: 'clio', access_token: MASK, base_url: 'https://clio.example' },
        max_concurrent_calls: 4,
      },
    });
    expect(res.status).toBe(200);
    expectNoSecretIn(res.text);
    expect(res.body.settings.max_concurrent_calls).toBe(4);
    expect(res.body.settings.crm).toEqual({
      provider: 'clio',
      access_token: MASK,
      base_url: 'https://clio.example',
    });
    const settings = await stored(slug);
    expect(settings.voice_webhook_secret).toBe(secrets.voice_webhook_secret);
    expect(settings.booking_webhook_secret).toBe(secrets.booking_webhook_secret);
    expect(settings.crm).toEqual({
      provider: 'clio',
      access_token: secrets.crmToken,
      base_url: 'https://clio.example',
    });
  });

  it('PATCH without a setting leaves it as it was', async () => {
    const before = await stored(slug);
    expect((await firmClient.patch(`/api/firms/${slug}`, { name: 'Only the name' })).status).toBe(200);
    expect((await firmClient.patch(`/api/firms/${slug}`, { settings: {} })).status).toBe(200);
    expect(await stored(slug)).toEqual(before);
  });

  it('PATCH with a new value replaces a secret', async () => {
    const rotated = `rotated-${rand(8)}`;
    const res = await firmClient.patch(`/api/firms/${slug}`, { settings: { voice_webhook_secret: rotated } });
    expect(res.status).toBe(200);
    expect(res.body.settings.voice_webhook_secret).toBe(MASK);
    expect(res.text).not.toContain(rotated);
    expect((await stored(slug)).voice_webhook_secret).toBe(rotated);
  });

  it('null removes a setting, or restores its default', async () => {
    const res = await firmClient.patch(`/api/firms/${slug}`, {
      settings: {
        voice_webhook_secret: null,
        slack_webhook_url: null,
        calling_window: null,
        timezone: null,
        max_concurrent_calls: null,
        crm: null,
      },
    });
    expect(res.status).toBe(200);
    const shown = res.body.settings;
    for (const key of ['voice_webhook_secret', 'slack_webhook_url', 'calling_window']) {
      expect(shown).not.toHaveProperty(key);
    }
    expect(shown.timezone).toBe('America/New_York');
    expect(shown.max_concurrent_calls).toBe(5);
    expect(shown.crm).toEqual({ provider: 'none' });
    // Untouched settings stay.
    expect(shown.booking_webhook_secret).toBe(MASK);
    expect(shown.reminder_offsets_minutes).toEqual([120]);

    const settings = await stored(slug);
    expect(settings).not.toHaveProperty('voice_webhook_secret');
    expect(settings).not.toHaveProperty('slack_webhook_url');
    expect(settings.crm).toEqual({ provider: 'none' });
    expect(settings.booking_webhook_secret).toBe(secrets.booking_webhook_secret);
    expect(await stack.admin.get(`/api/firms/${slug}`).then((r) => r.body.settings)).toEqual(shown);
  });

  it('a rejected PATCH changes nothing', async () => {
    const before = await stored(slug);
    const res = await firmClient.patch(`/api/firms/${slug}`, {
      name: 'Should not stick',
      settings: { max_concurrent_calls: 7, timezone: 'Mars/Base' },
    });
    expectError(res, 400, 'invalid_request');
    expect(await stored(slug)).toEqual(before);
    expect((await firmClient.get(`/api/firms/${slug}`)).body.name).not.toBe('Should not stick');
  });

  it('the mask where no secret is stored is a 400 naming the field, not a silent no-op', async () => {
    const bare = await createFirm(stack);
    for (const [settings, path] of [
      [{ voice_webhook_secret: MASK }, '/settings/voice_webhook_secret'],
      [{ booking_webhook_secret: MASK }, '/settings/booking_webhook_secret'],
      [{ crm: { provider: 'clio', access_token: MASK } }, '/settings/crm/access_token'],
    ] as const) {
      const res = await bare.client.patch(`/api/firms/${bare.slug}`, { settings });
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.details).toEqual([
        { path, message: expect.stringContaining('no secret is stored') },
      ]);
    }
    const settings = await stored(bare.slug);
    expect(settings.voice_webhook_secret).toBeUndefined();
    expect(settings.crm).toEqual({ provider: 'none' });
  });
});

describe('firm settings: the shapes the contract names', () => {
  it('a pasted Clio token may name its region; the mask keeps the token only in the same region', async () => {
    const firm = await createFirm(stack);
    const token = `clio-${rand(8)}`;
    const set = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { crm: { provider: 'clio', access_token: token, region: 'eu' } },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.settings.crm).toEqual({ provider: 'clio', access_token: MASK, region: 'eu' });
    expect((await stored(firm.slug)).crm).toEqual({ provider: 'clio', access_token: token, region: 'eu' });

    const kept = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { crm: { provider: 'clio', access_token: MASK, region: 'eu' } },
    });
    expect(kept.status).toBe(200);
    // Another region is another host: the token must be sent again.
    const moved = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { crm: { provider: 'clio', access_token: MASK, region: 'au' } },
    });
    expect(expectError(moved, 400, 'invalid_request')).toEqual([
      { path: '/settings/crm/access_token', message: expect.stringContaining('region') },
    ]);
    const unknown = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { crm: { provider: 'clio', access_token: token, region: 'mars' } },
    });
    expectError(unknown, 400, 'invalid_request');
    expect((await stored(firm.slug)).crm).toEqual({ provider: 'clio', access_token: token, region: 'eu' });
  });

  it('a webhook secret may be short: the contract sets no minimum, an empty one is refused', async () => {
    const firm = await createFirm(stack);
    const res = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { voice_webhook_secret: 'secret', booking_webhook_secret: 'abc' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const settings = await stored(firm.slug);
    expect([settings.voice_webhook_secret, settings.booking_webhook_secret]).toEqual(['secret', 'abc']);
    const empty = await firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { voice_webhook_secret: '' },
    });
    expectError(empty, 400, 'invalid_request');
    expect((await stored(firm.slug)).voice_webhook_secret).toBe('secret');
  });
});

describe('firm responses show exactly the documented settings', () => {
  let expectDocumented: Awaited<ReturnType<typeof documentedResponses>>;
  beforeAll(async () => {
    expectDocumented = await documentedResponses(stack.api);
  });

  it('POST, GET and PATCH answer the settings in the shape /openapi.json declares, every setting set', async () => {
    const slug = `f-${rand(4)}`;
    const created = await stack.admin.post('/api/firms', {
      slug,
      name: 'Every Setting LLP',
      settings: {
        timezone: 'Europe/Berlin',
        notification_emails: ['intake@example.com'],
        slack_webhook_url: 'https://hooks.slack.example/services/T/B/X',
        crm: { provider: 'clio', access_token: `clio-${rand(8)}`, base_url: 'https://clio.example' },
        booking: {
          provider: 'calcom',
          api_key: `cal-${rand(8)}`,
          event_type_id: 7,
          base_url: 'https://cal.example',
        },
        voice_webhook_secret: `voice-${rand(8)}`,
        booking_webhook_secret: `booking-${rand(8)}`,
        from_number: '+15551230000',
        max_concurrent_calls: 3,
        calling_window: { start: '09:00', end: '17:00', days: [1, 2, 3, 4, 5] },
        campaign_kill_switch: { opt_out_share: 0.1, window_calls: 20, failure_share: 0.4, window_dials: 10 },
        inquiry_consent_days: 30,
        reminder_offsets_minutes: [120],
        allowed_call_countries: ['US', 'CA', 'GB'],
        widget_daily_message_cap: 100,
        widget_daily_booking_cap: 5,
        openai_daily_char_budget: 100_000,
        allow_premium_numbers: true,
        missed_call_callback: {
          enabled: false,
          agent_id: 'agent_x',
          delay_seconds: 60,
          exclude_known_clients: true,
        },
      },
    });
    expectDocumented(created, 'POST', '/api/firms');
    expectDocumented(await stack.admin.get(`/api/firms/${slug}`), 'GET', '/api/firms/{slug}');
    const patched = await stack.admin.patch(`/api/firms/${slug}`, { settings: { max_concurrent_calls: 2 } });
    expectDocumented(patched, 'PATCH', '/api/firms/{slug}');
    // Every setting was sent, so every setting shows.
    expect(Object.keys(patched.body.settings).sort()).toEqual(Object.keys(FirmSettings.properties).sort());

    const bare = await stack.admin.post('/api/firms', { slug: `f-${rand(4)}`, name: 'Bare' });
    expectDocumented(bare, 'POST', '/api/firms');
  });

  it('a Clio connected with OAuth shows {provider, region, status, connected_at}, as documented', async () => {
    const firm = await createFirm(stack);
    const connectedAt = new Date().toISOString();
    await setFirmCrm(stack.services, firm.slug, {
      provider: 'clio',
      oauth: { region: 'eu', status: 'reconnect_required', connected_at: connectedAt },
    });
    const res = await firm.client.get(`/api/firms/${firm.slug}`);
    expectDocumented(res, 'GET', '/api/firms/{slug}');
    expect(res.body.settings.crm).toEqual({
      provider: 'clio',
      region: 'eu',
      status: 'reconnect_required',
      connected_at: connectedAt,
    });
  });

  it('PATCH and a change of its Clio connection take turns under the firm’s lock: neither undoes the other', async () => {
    const firm = await createFirm(stack);
    const connectedAt = new Date().toISOString();
    // Both write the whole document: a PATCH built from the firm as read before Clio refused its
    // refresh put `connected` back; a refusal built from the firm before a PATCH put its old
    // settings back. While the firm's lock is held, neither writes.
    const lock = await holdLock(stack.services.redis, redisKeys(stack.services.config).firmLock(firm.slug));
    const patch = firm.client.patch(`/api/firms/${firm.slug}`, {
      settings: { notification_emails: ['desk@turns.test'] },
    });
    const refused = setFirmCrm(stack.services, firm.slug, {
      provider: 'clio',
      oauth: { region: 'us', status: 'reconnect_required', connected_at: connectedAt },
    });
    // Two seconds: far longer than either write takes when nothing holds the firm.
    expect(await landsWithin([patch, refused], 2_000)).toBe('waiting');
    expect((await stored(firm.slug)).notification_emails).not.toEqual(['desk@turns.test']);
    await lock.release();
    expect((await patch).status).toBe(200);
    await refused;
    const now = (await firm.client.get(`/api/firms/${firm.slug}`)).body.settings;
    expect(now.notification_emails).toEqual(['desk@turns.test']);
    expect(now.crm).toEqual({
      provider: 'clio',
      region: 'us',
      status: 'reconnect_required',
      connected_at: connectedAt,
    });
  });

  it('a stored field no setting declares is never shown, at the top or inside a setting', async () => {
    const firm = await createFirm(stack, {
      crm: { provider: 'clio', access_token: `clio-${rand(8)}` },
      booking: { provider: 'calcom', api_key: `cal-${rand(8)}`, event_type_id: 7 },
    });
    const hidden = { top: `top-${rand(8)}`, crm: `crm-${rand(8)}`, booking: `booking-${rand(8)}` };
    const db = stack.services.mongo.db;
    // As an older version, or a mistake, could have stored them: around the API, through changeCached.
    await changeCached(db, () =>
      db.collection('firms').updateOne(
        { _id: firm.slug as never },
        {
          $set: {
            'settings.legacy_api_token': hidden.top,
            'settings.crm.refresh_token': hidden.crm,
            'settings.booking.webhook_token': hidden.booking,
          },
        },
      ),
    );
    const res = await firm.client.get(`/api/firms/${firm.slug}`);
    expectDocumented(res, 'GET', '/api/firms/{slug}');
    for (const value of Object.values(hidden)) expect(res.text).not.toContain(value);
    expect(res.body.settings).not.toHaveProperty('legacy_api_token');
    expect(res.body.settings.crm).toEqual({ provider: 'clio', access_token: MASK });
    expect(res.body.settings.booking).toEqual({ provider: 'calcom', api_key: MASK, event_type_id: 7 });
  });
});
