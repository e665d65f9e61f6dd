// Per-address limits count an IPv4 address as itself and an IPv6 address as its /64
// (core/platform/client-address.ts): every spelling of one /64 is one key.
import { describe, expect, it } from 'vitest';
import { limitAddress } from '../../core/platform/client-address.js';

describe('limitAddress', () => {
  it('IPv4, also written IPv4-mapped, is itself', () => {
    expect(limitAddress('203.0.113.9')).toBe('203.0.113.9');
    expect(limitAddress('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(limitAddress('::FFFF:203.0.113.9')).toBe('203.0.113.9');
  });

  it('IPv6 is its /64, however it is spelled', () => {
    const block = '2001:db8:77:1::/64';
    for (const ip of [
      '2001:db8:77:1::1',
      '2001:0db8:0077:0001:ffff:ffff:ffff:ffff',
      '2001:DB8:77:1:0:0:0:0',
      '2001:db8:77:1::1.2.3.4',
      '2001:db8:77:1::7%eth0',
    ]) {
      expect(limitAddress(ip), ip).toBe(block);
    }
    expect(limitAddress('2001:db8:77:2::1')).toBe('2001:db8:77:2::/64');
    expect(limitAddress('::1')).toBe('0:0:0:0::/64');
    expect(limitAddress('fe80::1')).toBe('fe80:0:0:0::/64');
  });

  it('anything else is kept as it is', () => {
    expect(limitAddress('')).toBe('');
    expect(limitAddress('not an address')).toBe('not an address');
  });
});
