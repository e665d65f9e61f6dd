// Clio's regions (docs/clio.md#regions): each has its own host; a CLIO_BASE_URL other than the `us`
// default (a local Clio in tests) replaces every region.
import { describe, expect, it } from 'vitest';
import { CLIO_REGIONS, clioAuthorizeUrl, clioRegionBase } from '../../core/integrations/crm/clio-oauth.js';
import { pastedTokenBase } from '../../core/domain/crm/firm-clio-client.js';

describe('Clio regions', () => {
  it('with the default CLIO_BASE_URL each region has its own host', () => {
    expect(clioRegionBase(CLIO_REGIONS.us, 'us')).toBe('https://app.clio.com');
    expect(clioRegionBase('https://app.clio.com/', 'eu')).toBe('https://eu.app.clio.com');
    expect(clioRegionBase(CLIO_REGIONS.us, 'ca')).toBe('https://ca.app.clio.com');
    expect(clioRegionBase(CLIO_REGIONS.us, 'au')).toBe('https://au.app.clio.com');
  });

  it('any other CLIO_BASE_URL replaces every region', () => {
    for (const region of ['us', 'eu', 'ca', 'au'] as const) {
      expect(clioRegionBase('http://127.0.0.1:4010/', region)).toBe('http://127.0.0.1:4010');
    }
  });

  it("a pasted token is used on its region's host, or on its base_url when one is set", () => {
    expect(pastedTokenBase(CLIO_REGIONS.us, {})).toBe('https://app.clio.com');
    expect(pastedTokenBase(CLIO_REGIONS.us, { region: 'eu' })).toBe('https://eu.app.clio.com');
    expect(pastedTokenBase(CLIO_REGIONS.us, { region: 'au' })).toBe('https://au.app.clio.com');
    expect(pastedTokenBase(CLIO_REGIONS.us, { region: 'eu', base_url: 'https://clio.example' })).toBe(
      'https://clio.example',
    );
    expect(pastedTokenBase('http://127.0.0.1:4010', { region: 'ca' })).toBe('http://127.0.0.1:4010');
  });

  it('the authorize URL carries response_type=code, client_id, redirect_uri and state', () => {
    const url = new URL(clioAuthorizeUrl('https://eu.app.clio.com', 'cid', 'https://svc.test/cb', 's1'));
    expect(url.origin + url.pathname).toBe('https://eu.app.clio.com/oauth/authorize');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: 'cid',
      redirect_uri: 'https://svc.test/cb',
      state: 's1',
    });
  });
});
