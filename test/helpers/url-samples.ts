// URLs for the firm settings the service calls (slack_webhook_url, crm.base_url): sample lists
// for the pure rule (test/unit/url-policy.test.ts) and the API applying it (test/hardening/).

/** A sample of what the URL rule refuses. */
export const REFUSED_URLS = [
  'http://127.0.0.1/x',
  'https://169.254.169.254/',
  'https://10.0.0.1/',
  'https://[::1]/',
  'https://localhost/',
  'file:///etc/passwd',
  'https://user:pass@example.com/',
];

/** A public https:// Slack webhook URL the rule accepts. */
export const SLACK_WEBHOOK_URL = 'https://hooks.slack.com/services/T/B/X';

/**
 * Hosts (as written in a URL) that are neither public nor loopback, with what they are: refused
 * even with ALLOW_PRIVATE_URLS=true, which lifts only https:// and loopback.
 */
export const LENIENT_REFUSED_ADDRESSES: ReadonlyArray<readonly [host: string, what: string]> = [
  ['169.254.169.254', 'the cloud metadata address (link-local)'],
  ['[::ffff:a9fe:a9fe]', 'the cloud metadata address, IPv4-mapped'],
  ['10.0.0.5', 'a private address (10/8)'],
  ['172.16.0.1', 'a private address (172.16/12)'],
  ['192.168.1.1', 'a private address (192.168/16)'],
  ['100.64.0.1', 'a CGNAT address'],
  ['0.0.0.0', 'the unspecified IPv4 address'],
  ['224.0.0.1', 'an IPv4 multicast address'],
  ['[::]', 'the unspecified IPv6 address'],
  ['[::ffff:10.0.0.1]', 'a private address, IPv4-mapped'],
  ['[fe80::1]', 'an IPv6 link-local address'],
  ['[fc00::1]', 'an IPv6 unique-local address'],
  ['[ff02::1]', 'an IPv6 multicast address'],
];
