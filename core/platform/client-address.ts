import { isIPv4, isIPv6 } from 'node:net';

// The client address a per-address limit counts against. An IPv4 address is itself (also when a
// dual-stack socket writes it `::ffff:a.b.c.d`); an IPv6 address counts as its /64, the block
// one subscriber or one host is given (RFC 6177; a single machine may use any of 2^64 addresses,
// so a per-/128 limit is no limit). Anything else (no address) is kept as it is.

/** The address, or the IPv6 /64 it is in (`2001:db8:1:2::/64`), that per-address limits count. */
export function limitAddress(ip: string): string {
  const address = ip.replace(/%.*$/, ''); // a zone id names the interface, not the client
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped !== null && isIPv4(mapped[1]!)) return mapped[1]!;
  if (!isIPv6(address)) return ip;
  const groups = expandIPv6(address);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address, each lower case without leading zeros. */
function expandIPv6(address: string): string[] {
  const [head = '', tail] = address.toLowerCase().split('::');
  const part = (text: string): string[] => {
    if (text === '') return [];
    const pieces = text.split(':');
    const last = pieces[pieces.length - 1]!;
    if (last.includes('.')) {
      // An embedded IPv4 tail is the last two groups.
      const [a, b, c, d] = last.split('.').map(Number) as [number, number, number, number];
      pieces.splice(-1, 1, ((a << 8) | b).toString(16), ((c << 8) | d).toString(16));
    }
    return pieces;
  };
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16).toString(16));
}
