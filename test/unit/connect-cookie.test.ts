// The connect cookie that binds an OAuth connect flow to its browser (core/domain/crm/connect-cookie.ts):
// behind https a `__Host-` cookie, Secure, Path=/, no Domain (a browser refuses the prefix otherwise);
// over plain http (local runs, tests) no prefix and no Secure, which a browser would refuse there.
import { describe, expect, it } from 'vitest';
import {
  browserBinding,
  browserKeyOf,
  connectCookie,
  cookieValue,
  sameBrowser,
  setCookieHeader,
} from '../../core/domain/crm/connect-cookie.js';

describe('the connect cookie', () => {
  it('is __Host- and Secure behind https, with Path=/ and no Domain', () => {
    const cookie = connectCookie('https://intake.example.com');
    expect(cookie).toEqual({ name: '__Host-intake_oauth', secure: true });
    const header = setCookieHeader(cookie, 'k'.repeat(43));
    expect(header).toBe(
      `__Host-intake_oauth=${'k'.repeat(43)}; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure`,
    );
    expect(header).not.toMatch(/Domain=/i);
  });

  it('has neither the prefix nor Secure over plain http', () => {
    const cookie = connectCookie('http://127.0.0.1:3000');
    expect(cookie).toEqual({ name: 'intake_oauth', secure: false });
    expect(setCookieHeader(cookie, 'k'.repeat(43))).not.toMatch(/Secure|__Host-/);
  });

  it("keeps a browser's well-formed key, replaces anything else, and matches only that key", () => {
    const { key, fresh } = browserKeyOf(undefined);
    expect(fresh).toBe(true);
    expect(browserKeyOf(key)).toEqual({ key, fresh: false });
    expect(browserKeyOf('short').fresh).toBe(true);
    const binding = browserBinding(key);
    expect(binding).not.toContain(key);
    expect(sameBrowser(binding, key)).toBe(true);
    expect(sameBrowser(binding, browserKeyOf(undefined).key)).toBe(false);
    expect(sameBrowser(binding, undefined)).toBe(false);
    expect(cookieValue(`a=1; intake_oauth=${key}; b=2`, 'intake_oauth')).toBe(key);
    expect(cookieValue('intake_oauth_x=1', 'intake_oauth')).toBeUndefined();
  });
});
