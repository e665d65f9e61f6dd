import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { lookup as dnsLookupAsync } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

// Which URLs the service may call on a firm's behalf (slack_webhook_url, crm.base_url): https://
// to a public address. Three checks, one rule:
//   - urlNotAllowedReason / assertUrlAllowed: the URL as written, when it is stored;
//   - assertResolvesToPublic: the host's addresses (DNS), just before a call;
//   - publicOnlyLookup: a `lookup` for http.Agent / https.Agent / undici `connect`, so the
//     connection goes to exactly the address that was checked (no DNS-rebinding gap).
// A client must use both the call-time check and the lookup: Node skips `lookup` when the host
// is an IP literal, and the URL check is what refuses a private IP literal. For the same reason
// it must not follow redirects (axios: maxRedirects 0; fetch: redirect 'manual'): a redirect
// to an IP literal would bypass the lookup.
// `allowHttpAndLoopback` (ALLOW_PRIVATE_URLS=true, local runs and tests, where the fakes listen on
// 127.0.0.1) lifts exactly two things: http:// is allowed, and so are loopback hosts (localhost
// and *.localhost, 127.0.0.0/8, ::1, ::ffff:127.x.y.z). Every other non-public address (private
// ranges, link-local and the cloud metadata address 169.254.169.254, 0.0.0.0, CGNAT, multicast,
// unique-local, ...) stays refused, as written and as resolved. Never the default.

export interface UrlPolicy {
  /**
   * Also allow http:// and loopback hosts (ALLOW_PRIVATE_URLS); every other non-public address
   * is refused all the same.
   */
  allowHttpAndLoopback: boolean;
}

/** A URL (or the address it resolves to) the service refuses to call. */
export class UrlNotAllowedError extends Error {
  readonly code = 'url_not_allowed';
  constructor(readonly reason: string) {
    super(`URL not allowed: ${reason}`);
    this.name = 'UrlNotAllowedError';
  }
}

// Addresses that are not publicly routable unicast: IANA special-purpose registries, private,
// loopback, link-local, CGNAT, multicast, reserved, unspecified, documentation, benchmarking.
// Two lists: a BlockList matches an IPv4 address against IPv6 rules too (as ::ffff:a.b.c.d,
// which ::/3 below contains).
const NOT_PUBLIC_V4 = new BlockList();
const NOT_PUBLIC_V6 = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // CGNAT shared address space
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation (TEST-NET-1)
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation (TEST-NET-2)
  ['203.0.113.0', 24], // documentation (TEST-NET-3)
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
] as const) {
  NOT_PUBLIC_V4.addSubnet(net, prefix, 'ipv4');
}
// IPv6: only global unicast (2000::/3) is public, less its special blocks. ::/3 covers the
// unspecified and loopback addresses, IPv4-compatible, IPv4-mapped (checked as IPv4 below) and
// NAT64 addresses; 4000::/2 and 8000::/1 cover unique-local, link-local, site-local, multicast
// and everything unassigned.
for (const [net, prefix] of [
  ['::', 3],
  ['4000::', 2],
  ['8000::', 1],
  ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID, ...)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4
  ['3ffe::', 16], // the former 6bone
  ['3fff::', 20], // documentation
] as const) {
  NOT_PUBLIC_V6.addSubnet(net, prefix, 'ipv6');
}

// Loopback, the only non-public addresses allowHttpAndLoopback lets through.
const LOOPBACK_V4 = new BlockList();
LOOPBACK_V4.addSubnet('127.0.0.0', 8, 'ipv4');
const LOOPBACK_V6 = new BlockList();
LOOPBACK_V6.addAddress('::1', 'ipv6');

const IPV4_MAPPED = /^::ffff:(?:(\d+\.\d+\.\d+\.\d+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/i;

/** The IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d), else undefined. */
function mappedIpv4(ip: string): string | undefined {
  const m = IPV4_MAPPED.exec(ip);
  if (m === null) return undefined;
  if (m[1] !== undefined) return m[1];
  const hi = parseInt(m[2]!, 16);
  const lo = parseInt(m[3]!, 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** True when `ip` (an IPv4 or IPv6 address, no brackets) is a public unicast address. */
export function isPublicAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return !NOT_PUBLIC_V4.check(ip, 'ipv4');
  if (family === 6) {
    const v4 = mappedIpv4(ip);
    if (v4 !== undefined) return isPublicAddress(v4);
    return !NOT_PUBLIC_V6.check(ip, 'ipv6');
  }
  return false;
}

/** True when `ip` is a loopback address: 127.0.0.0/8, ::1, or IPv4-mapped 127.x.y.z. */
export function isLoopbackAddress(ip: string): boolean {
  const family = isIP(ip);
  if (family === 4) return LOOPBACK_V4.check(ip, 'ipv4');
  if (family === 6) {
    const v4 = mappedIpv4(ip);
    if (v4 !== undefined) return isLoopbackAddress(v4);
    return LOOPBACK_V6.check(ip, 'ipv6');
  }
  return false;
}

/** True when the policy lets the service call `ip`: public, or loopback with allowHttpAndLoopback. */
function isAllowedAddress(ip: string, policy: UrlPolicy): boolean {
  return isPublicAddress(ip) || (policy.allowHttpAndLoopback && isLoopbackAddress(ip));
}

const SCHEME_AND_AUTHORITY = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#\\]*)/;

function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Why the service may not call this URL, judged on the URL alone (no DNS); null when it may.
 * Use when a URL is stored; call time also needs assertResolvesToPublic and publicOnlyLookup.
 */
export function urlNotAllowedReason(url: string, policy: UrlPolicy): string | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a valid URL';
  }
  const allowed = policy.allowHttpAndLoopback ? ['https:', 'http:'] : ['https:'];
  if (!allowed.includes(parsed.protocol)) {
    return `must use ${policy.allowHttpAndLoopback ? 'https:// or http://' : 'https://'}`;
  }
  const written = SCHEME_AND_AUTHORITY.exec(url.trim());
  if (written === null) return 'must be written as scheme://host/...';
  if (parsed.username !== '' || parsed.password !== '' || written[2]!.includes('@')) {
    return 'must not contain a user name or password';
  }
  const host = parsed.hostname;
  if (host === '') return 'has no host';
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  const family = isIP(literal);
  if (family === 4) {
    // WHATWG URL turns 2130706433, 0x7f.1, 0177.0.0.1, 127.1 into 127.0.0.1: refuse any IPv4
    // address not written in the usual dotted-decimal form.
    const writtenHost = written[2]!.replace(/:\d*$/, '').toLowerCase();
    if (writtenHost !== host) return 'writes an IP address in a non-standard form';
  }
  if (isLocalhostName(host)) return policy.allowHttpAndLoopback ? null : 'names a local host';
  if (family !== 0 && !isAllowedAddress(literal, policy)) return notAllowedAddress(policy);
  return null;
}

function notAllowedAddress(policy: UrlPolicy): string {
  return policy.allowHttpAndLoopback ? 'is not a public or loopback address' : 'is not a public address';
}

/** Throws UrlNotAllowedError when urlNotAllowedReason finds a reason. */
export function assertUrlAllowed(url: string, policy: UrlPolicy): void {
  const reason = urlNotAllowedReason(url, policy);
  if (reason !== null) throw new UrlNotAllowedError(`${redact(url)} ${reason}`);
}

/** The URL without anything after the host (paths carry secrets, e.g. Slack webhook URLs). */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.protocol}//${parsed.host}`;
  } catch {
    return 'the URL';
  }
}

type Resolve = (host: string) => Promise<LookupAddress[]>;
const resolveAll: Resolve = (host) => dnsLookupAsync(host, { all: true });

/**
 * The call-time check: the URL check, then every address the host resolves to must be public,
 * or loopback with allowHttpAndLoopback (a host with one private address among public ones is
 * refused). `resolve` is for tests.
 */
export async function assertResolvesToPublic(
  url: string,
  policy: UrlPolicy,
  resolve: Resolve = resolveAll,
): Promise<void> {
  assertUrlAllowed(url, policy);
  const host = new URL(url).hostname;
  const literal = host.startsWith('[') ? host.slice(1, -1) : host;
  const addresses =
    isIP(literal) === 0 ? await resolve(literal) : [{ address: literal, family: isIP(literal) }];
  if (addresses.length === 0) throw new UrlNotAllowedError(`${host} resolves to no address`);
  const bad = addresses.find((a) => !isAllowedAddress(a.address, policy));
  if (bad !== undefined) throw new UrlNotAllowedError(`${host} resolves to ${resolvedTo(policy)}`);
}

function resolvedTo(policy: UrlPolicy): string {
  return policy.allowHttpAndLoopback ? 'an address neither public nor loopback' : 'a non-public address';
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** dns.lookup with `all: true`, the resolver publicOnlyLookup uses. */
export type ResolveAll = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** The shape of `lookup` in net.connect, http.Agent and undici's `connect` options. */
export type PublicOnlyLookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

/**
 * A `lookup` for outbound clients: resolves the host, refuses (UrlNotAllowedError) when any of
 * its addresses is not public (with allowHttpAndLoopback: neither public nor loopback), and hands
 * the socket only the addresses it checked. `resolve` is for tests.
 */
export function publicOnlyLookup(policy: UrlPolicy, resolve: ResolveAll = dnsLookup): PublicOnlyLookup {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err !== null) return callback(err, []);
      if (addresses.length === 0) {
        return callback(
          Object.assign(new Error(`${hostname} resolves to no address`), { code: 'ENOTFOUND' }),
          [],
        );
      }
      if (addresses.some((a) => !isAllowedAddress(a.address, policy))) {
        return callback(new UrlNotAllowedError(`${hostname} resolves to ${resolvedTo(policy)}`), []);
      }
      if (options.all === true) return callback(null, addresses);
      const first = addresses[0]!;
      return callback(null, first.address, first.family);
    });
  };
}
