import { describe, expect, it } from 'vitest';
import { ringCentralContactRow } from '../../core/domain/contacts/ringcentral-contact-row.js';
import { loadSpec } from '../fakes/spec/openapi-spec.js';

// A RingCentral address-book record as the import row the sync stores (docs/ringcentral.md#contacts-sync).

describe('ringCentralContactRow', () => {
  it('keeps names, company, the first phone in order of preference and the first email', () => {
    expect(
      ringCentralContactRow({
        id: 623045004,
        availability: 'Alive',
        firstName: 'Charlie',
        lastName: 'Williams',
        company: 'Example, Inc.',
        homePhone: '+13125550102',
        businessPhone: '+13125550101',
        email2: 'charlie@example.com',
      }),
    ).toEqual({
      source: 'ringcentral',
      external_id: '623045004',
      first_name: 'Charlie',
      last_name: 'Williams',
      name: 'Charlie Williams',
      company: 'Example, Inc.',
      phone: '+13125550101',
      email: 'charlie@example.com',
    });
  });

  it('is null for a removed record, one without an id, or one with neither phone nor email', () => {
    expect(ringCentralContactRow({ id: 1, availability: 'Deleted', email: 'a@example.com' })).toBeNull();
    expect(ringCentralContactRow({ id: 2, availability: 'Purged', mobilePhone: '+13125550101' })).toBeNull();
    expect(ringCentralContactRow({ email: 'a@example.com' })).toBeNull();
    expect(
      ringCentralContactRow({ id: 3, firstName: 'No', lastName: 'Points', businessFax: '+13125550199' }),
    ).toBeNull();
  });

  it('the fake may answer only fields RingCentral’s PersonalContactResource has', () => {
    const spec = loadSpec('ringcentral');
    const match = spec.match('get', '/restapi/v1.0/account/~/extension/~/address-book-sync')!;
    const record = { id: 5, availability: 'Alive', mobilePhone: '+13125550101' };
    expect(spec.checkResponse(match, 200, { records: [record] })).toEqual([]);
    expect(spec.checkResponse(match, 200, { records: [{ ...record, phone: '+13125550101' }] })).toEqual([
      expect.stringContaining('has a property the document does not have: "phone"'),
    ]);
  });
});
