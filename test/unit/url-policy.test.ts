// The URL rule of core/platform/url-policy.ts, without DNS or sockets: URLs the service calls for
// a firm (slack_webhook_url, crm.base_url) are https:// to a public address, judged as written
// (urlNotAllowedReason, isPublicAddress) and on the addresses a host resolves to (the resolver is
// passed in). The system resolver, the socket-level lookup and the API's use of the rule are in
// test/hardening/url-policy.test.ts.
import { describe, expect, it } from 'vitest';
import {
  assertResolvesToPublic,
  isLoopbackAddress,
  isPublicAddress,
  UrlNotAllowedError,
  urlNotAllowedReason,
} from '../../core/platform/url-policy.js';
import { LENIENT_REFUSED_ADDRESSES, REFUSED_URLS, SLACK_WEBHOOK_URL } from '../helpers/url-samples.js';

const strict = { allowHttpAndLoopback: false };
const lenient = { allowHttpAndLoopback: true };

describe('urlNotAllowedReason (the URL as written)', () => {
  it.each([
    ...REFUSED_URLS,
    'http://example.com/', // http:// only with ALLOW_PRIVATE_URLS
    'ftp://example.com/',
    'https://LOCALHOST./',
    'https://api.localhost/',
    'https://0.0.0.0/',
    'https://127.1/',
    'https://2130706433/', // decimal 127.0.0.1
    'https://0x7f.0.0.1/', // hex
    'https://0177.0.0.1/', // octal
    'https://3232235777/', // decimal 192.168.1.1
    'https://8.8.8.8./', // a trailing dot: not the dotted form
    'https://%31%32%37.0.0.1/',
    'https://172.16.5.4/',
    'https://192.168.0.1/',
    'https://100.64.0.1/', // CGNAT
    'https://224.0.0.1/', // multicast
    'https://240.0.0.1/', // reserved
    'https://255.255.255.255/',
    'https://192.0.2.10/', // documentation
    'https://[::]/',
    'https://[::ffff:127.0.0.1]/', // IPv4-mapped loopback
    'https://[::ffff:a9fe:a9fe]/', // IPv4-mapped 169.254.169.254
    'https://[fe80::1]/', // link-local
    'https://[fd00::1]/', // unique local
    'https://[ff02::1]/', // multicast
    'https://[64:ff9b::a00:1]/', // NAT64 of 10.0.0.1
    'https://[2001:db8::1]/', // documentation
    'https://:pass@example.com/',
    'https://user@example.com/',
    'https:example.com/', // not scheme://host
    'https:\\\\example.com/',
    'not a url',
  ])('refuses %s', (url) => {
    expect(urlNotAllowedReason(url, strict)).toEqual(expect.any(String));
  });

  it.each([
    SLACK_WEBHOOK_URL,
    'https://app.clio.com',
    'https://eu.app.clio.com/api/v4',
    'https://8.8.8.8/',
    'https://[2606:4700:4700::1111]/',
    'https://[::ffff:8.8.8.8]/',
    'https://example.com:8443/path?q=1',
  ])('accepts %s', (url) => {
    expect(urlNotAllowedReason(url, strict)).toBeNull();
  });

  it('ALLOW_PRIVATE_URLS allows http:// and loopback hosts, still not other schemes, user info or odd IP forms', () => {
    for (const url of [
      'http://127.0.0.1:4000/x',
      'http://127.8.9.10/',
      'https://localhost/',
      'http://LOCALHOST./x',
      'http://api.localhost:3000/',
      'http://[::1]:80/',
      'http://[::ffff:127.0.0.1]/', // IPv4-mapped loopback
      'http://example.com/',
      'https://8.8.8.8/',
    ]) {
      expect(urlNotAllowedReason(url, lenient)).toBeNull();
    }
    for (const url of [
      'file:///etc/passwd',
      'https://user:pass@127.0.0.1/',
      'http://2130706433/',
      'gopher://x/',
    ]) {
      expect(urlNotAllowedReason(url, lenient)).toEqual(expect.any(String));
    }
  });

  it.each(LENIENT_REFUSED_ADDRESSES.map(([host, what]) => [what, host]))(
    'ALLOW_PRIVATE_URLS still refuses %s (%s) as written, over http:// and https://',
    (_what, host) => {
      for (const scheme of ['http', 'https']) {
        expect(urlNotAllowedReason(`${scheme}://${host}/latest`, lenient)).toBe(
          'is not a public or loopback address',
        );
      }
    },
  );

  it('isPublicAddress knows the special ranges of IPv4 and IPv6', () => {
    for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPublicAddress(ip)).toBe(true);
    }
    for (const ip of [
      '127.0.0.1',
      ...LENIENT_REFUSED_ADDRESSES.map(([host]) => host.replace(/^\[|\]$/g, '')),
      '10.1.2.3',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.127.0.1',
      '0.0.0.0',
      '239.1.1.1',
      '::',
      '::1',
      '::ffff:10.0.0.1',
      'fe80::1',
      'fc00::1',
      'ff00::1',
      '2002:7f00:1::1',
      'not-an-ip',
    ]) {
      expect(isPublicAddress(ip)).toBe(false);
    }
  });

  it('isLoopbackAddress: 127.0.0.0/8, ::1 and IPv4-mapped loopback only', () => {
    for (const ip of [
      '127.0.0.1',
      '127.255.255.254',
      '::1',
      '0:0:0:0:0:0:0:1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
    ]) {
      expect(isLoopbackAddress(ip)).toBe(true);
    }
    for (const ip of [
      '0.0.0.0',
      '::',
      '10.0.0.1',
      '169.254.169.254',
      '::ffff:a9fe:a9fe',
      '::2',
      '::7f00:1',
      'localhost',
    ]) {
      expect(isLoopbackAddress(ip)).toBe(false);
    }
  });
});

describe('assertResolvesToPublic (the call-time check, on resolved addresses)', () => {
  it('refuses a private IP literal, accepts a public one without DNS', async () => {
    const noDns = async (): Promise<never> => {
      throw new Error('resolved an IP literal');
    };
    await expect(assertResolvesToPublic('https://127.0.0.1/', strict, noDns)).rejects.toBeInstanceOf(
      UrlNotAllowedError,
    );
    await expect(assertResolvesToPublic('https://[::1]/', strict, noDns)).rejects.toBeInstanceOf(
      UrlNotAllowedError,
    );
    await expect(assertResolvesToPublic('https://8.8.8.8/', strict, noDns)).resolves.toBeUndefined();
  });

  it('refuses a public-looking name when ANY of its addresses is not public', async () => {
    const resolver = (answers: string[]) => async (host: string) => {
      expect(host).toBe('hooks.example.com');
      return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    const url = 'https://hooks.example.com/x';
    await expect(assertResolvesToPublic(url, strict, resolver(['93.184.216.34']))).resolves.toBeUndefined();
    for (const answers of [['10.0.0.7'], ['93.184.216.34', '127.0.0.1'], ['2606:2800::1', 'fd00::1'], []]) {
      await expect(assertResolvesToPublic(url, strict, resolver(answers))).rejects.toBeInstanceOf(
        UrlNotAllowedError,
      );
    }
    // It checks the URL first: no DNS for a URL refused as written.
    await expect(
      assertResolvesToPublic('http://hooks.example.com/', strict, resolver(['8.8.8.8'])),
    ).rejects.toThrow(/https/);
  });

  it('ALLOW_PRIVATE_URLS: a name resolving to loopback passes, to any other non-public address it is refused', async () => {
    const resolver = (answers: string[]) => async (host: string) => {
      expect(host).toBe('hooks.example.com');
      return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    };
    const url = 'http://hooks.example.com/x';
    for (const answers of [['127.0.0.1'], ['::1', '127.0.0.1'], ['::ffff:127.0.0.1'], ['93.184.216.34']]) {
      await expect(assertResolvesToPublic(url, lenient, resolver(answers))).resolves.toBeUndefined();
    }
    for (const [host] of LENIENT_REFUSED_ADDRESSES) {
      const address = host.replace(/^\[|\]$/g, '');
      for (const answers of [[address], ['127.0.0.1', address]]) {
        await expect(assertResolvesToPublic(url, lenient, resolver(answers))).rejects.toThrow(
          'hooks.example.com resolves to an address neither public nor loopback',
        );
      }
    }
  });

  it('ALLOW_PRIVATE_URLS: an IP literal is checked without DNS, loopback allowed, other non-public refused', async () => {
    const noDns = async (): Promise<never> => {
      throw new Error('resolved an IP literal');
    };
    for (const url of ['http://127.0.0.1:4000/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/']) {
      await expect(assertResolvesToPublic(url, lenient, noDns)).resolves.toBeUndefined();
    }
    for (const [host] of LENIENT_REFUSED_ADDRESSES) {
      await expect(assertResolvesToPublic(`http://${host}/latest`, lenient, noDns)).rejects.toBeInstanceOf(
        UrlNotAllowedError,
      );
    }
  });
});
