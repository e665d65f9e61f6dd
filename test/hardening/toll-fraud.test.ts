// Toll fraud (docs/authentication.md#firm-settings, docs/calls.md#which-numbers-may-be-dialled): the
// guard was once self-service. A firm key added SO, KP, CU, LV, TV, NU to allowed_call_countries,
// and a US premium-rate number (+1 900) was registered as a call. Now only the platform widens what a
// firm may dial (a firm token may narrow it: 403 naming the field otherwise), and premium-rate and
// shared-cost numbers (libphonenumber's types) are refused unless the platform allows them for the firm.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signSessionToken } from '../../core/domain/access/session.js';
import { callsOf, createAgent } from '../calls/support.js';
import { createCampaign, launch } from '../campaigns/support.js';
import type { ApiClient } from '../helpers/client.js';
import { detailPaths, expectError } from '../helpers/expect-error.js';
import { createFirm, rand, startStack, type Stack } from '../helpers/stack.js';

const US_PREMIUM = '+19005550199';
const GB_PREMIUM = '+449012345678';
const FR_SHARED_COST = '+33810123456';
const US_ORDINARY = '+14155550123';
const FRAUD_COUNTRIES = ['SO', 'KP', 'CU', 'LV', 'TV', 'NU'];

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => stack?.stop());

const patchSettings = (client: ApiClient, slug: string, settings: Record<string, unknown>) =>
  client.patch(`/api/firms/${slug}`, { settings });
const settingsOf = async (slug: string) => (await stack.admin.get(`/api/firms/${slug}`)).body.settings;

describe('widening what a firm may dial is platform-only', () => {
  it('a firm key adding SO, KP, CU, LV, TV, NU is 403 naming the field, and nothing changes', async () => {
    const firm = await createFirm(stack);
    const res = await patchSettings(firm.client, firm.slug, {
      allowed_call_countries: ['US', 'CA', ...FRAUD_COUNTRIES],
    });
    const details = expectError(res, 403, 'forbidden');
    expect(detailPaths(res)).toEqual(['/settings/allowed_call_countries']);
    expect(details[0]!.message).toContain('SO, KP, CU, LV, TV, NU');
    // Replacing the list with others is adding them too; so is a firm session token.
    expectError(
      await patchSettings(firm.client, firm.slug, { allowed_call_countries: ['SO'] }),
      403,
      'forbidden',
    );
    const session = await signSessionToken({ firm: firm.slug, sub: 'u-1' }, stack.config.sessionSecret, 3600);
    expectError(
      await patchSettings(stack.api.withToken(session), firm.slug, { allowed_call_countries: ['US', 'GB'] }),
      403,
      'forbidden',
    );
    // Nothing of a refused request is stored, its other fields included.
    expectError(
      await firm.client.patch(`/api/firms/${firm.slug}`, {
        name: 'Renamed',
        settings: { max_concurrent_calls: 2, allowed_call_countries: ['KP'] },
      }),
      403,
      'forbidden',
    );
    const read = await stack.admin.get(`/api/firms/${firm.slug}`);
    expect(read.body.name).toBe(`Firm ${firm.slug}`);
    expect(read.body.settings).toMatchObject({
      allowed_call_countries: ['US', 'CA'],
      max_concurrent_calls: 5,
    });
  });

  it('a firm key may narrow its list or leave it as it is, but not restore a country it dropped', async () => {
    const firm = await createFirm(stack);
    expect(
      (await patchSettings(firm.client, firm.slug, { allowed_call_countries: ['CA', 'US'] })).status,
    ).toBe(200);
    const narrowed = await patchSettings(firm.client, firm.slug, { allowed_call_countries: ['US'] });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.settings.allowed_call_countries).toEqual(['US']);
    expect((await patchSettings(firm.client, firm.slug, { allowed_call_countries: [] })).status).toBe(200);
    // Back to a country it dropped, or to the default (null), is adding: the platform's call.
    expectError(
      await patchSettings(firm.client, firm.slug, { allowed_call_countries: ['US'] }),
      403,
      'forbidden',
    );
    expectError(
      await patchSettings(firm.client, firm.slug, { allowed_call_countries: null }),
      403,
      'forbidden',
    );
    expect((await settingsOf(firm.slug)).allowed_call_countries).toEqual([]);
    // Settings that do not widen are the firm's own, as before.
    expect((await patchSettings(firm.client, firm.slug, { max_concurrent_calls: 3 })).status).toBe(200);
  });

  it('the platform key (and a platform session) may add countries', async () => {
    const firm = await createFirm(stack);
    const added = await patchSettings(stack.admin, firm.slug, { allowed_call_countries: ['US', 'CA', 'GB'] });
    expect(added.status).toBe(200);
    expect(added.body.settings.allowed_call_countries).toEqual(['US', 'CA', 'GB']);
    const platform = stack.api.withToken(
      await signSessionToken({ firm: '*', sub: `ops-${rand(2)}` }, stack.config.sessionSecret, 3600),
    );
    expect((await patchSettings(platform, firm.slug, { allowed_call_countries: ['US', 'FR'] })).status).toBe(
      200,
    );
    expect((await settingsOf(firm.slug)).allowed_call_countries).toEqual(['US', 'FR']);
  });

  it('allow_premium_numbers is the platform’s to turn on; a firm may turn it off', async () => {
    const firm = await createFirm(stack);
    const res = await patchSettings(firm.client, firm.slug, { allow_premium_numbers: true });
    expectError(res, 403, 'forbidden');
    expect(detailPaths(res)).toEqual(['/settings/allow_premium_numbers']);
    expect((await settingsOf(firm.slug)).allow_premium_numbers).toBeUndefined();
    expect((await patchSettings(stack.admin, firm.slug, { allow_premium_numbers: true })).status).toBe(200);
    expect((await settingsOf(firm.slug)).allow_premium_numbers).toBe(true);
    // Sending what is stored is no change; turning it off is narrowing.
    expect((await patchSettings(firm.client, firm.slug, { allow_premium_numbers: true })).status).toBe(200);
    expect((await patchSettings(firm.client, firm.slug, { allow_premium_numbers: false })).status).toBe(200);
    expectError(
      await patchSettings(firm.client, firm.slug, { allow_premium_numbers: true }),
      403,
      'forbidden',
    );
  });
});

describe('premium-rate and shared-cost destinations', () => {
  it('create-outbound-call to +19005550199 (US premium rate) is 400 destination_not_allowed; no call stored', async () => {
    const firm = await createFirm(stack, { allowed_call_countries: ['US', 'CA', 'GB', 'FR'] });
    const agentId = await createAgent(firm.client, firm.slug);
    const call = (toNumber: string) =>
      firm.client.post('/api/v2/create-outbound-call', { toNumber, agentId, firmSlug: firm.slug });
    for (const [number, kind] of [
      [US_PREMIUM, 'premium-rate'],
      [GB_PREMIUM, 'premium-rate'],
      [FR_SHARED_COST, 'shared-cost'],
    ] as const) {
      const res = await call(number);
      const details = expectError(res, 400, 'destination_not_allowed');
      expect(detailPaths(res)).toEqual(['/toNumber']);
      expect(details[0]!.message).toContain(kind);
    }
    expect(await callsOf(stack).countDocuments({ firm: firm.slug })).toBe(0);
    expect((await call(US_ORDINARY)).status).toBe(200);

    // Allowed by the platform for this firm, they are dialled like any other number.
    expect((await patchSettings(stack.admin, firm.slug, { allow_premium_numbers: true })).status).toBe(200);
    const allowed = await call(US_PREMIUM);
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    expect(allowed.body.status).toBe('registered');
  });

  it('a campaign does not count or call premium-rate and shared-cost leads', async () => {
    const firm = await createFirm(stack, { allowed_call_countries: ['US', 'FR'] });
    const agentId = await createAgent(firm.client, firm.slug);
    const created = await createCampaign(firm.client, {
      firmSlug: firm.slug,
      agentId,
      leads: [{ phone: US_PREMIUM }, { phone: FR_SHARED_COST }, { phone: US_ORDINARY }],
    });
    expect(created.leads_total).toBe(3);
    expect(await launch(firm.client, created.id)).toBe(1);
  });
});
