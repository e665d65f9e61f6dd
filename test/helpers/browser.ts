import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { inject } from 'vitest';
import { CHROMIUM_ARGS } from './chromium.js';

// Headless Debian Chromium driven by playwright-core (`npx playwright install` cannot download
// a browser here). The global setup makes sure the binary exists and provides its path.

export async function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: inject('chromiumPath'),
    args: [...CHROMIUM_ARGS, ...extraArgs],
  });
}

/**
 * Chromium resolves `hostname` to 127.0.0.1 and nothing else, so a page can be opened under a
 * public-looking name (pages may behave differently on localhost) while no request can leave.
 * 127.0.0.1 itself stays reachable (the rules would otherwise refuse even the IP literal).
 */
export function mapHostToLoopback(hostname: string): string[] {
  return [`--host-resolver-rules=MAP ${hostname} 127.0.0.1, MAP * ~NOTFOUND, EXCLUDE 127.0.0.1`];
}

export interface RequestLog {
  /** Every URL the context requested (documents, scripts, styles, fetches, images). */
  urls: string[];
  /** The requested URLs whose host is not one of `hosts`. */
  outside(hosts: string[]): string[];
}

export function recordRequests(context: BrowserContext): RequestLog {
  const urls: string[] = [];
  context.on('request', (request) => urls.push(request.url()));
  return {
    urls,
    outside: (hosts) =>
      urls.filter((url) => {
        const { protocol, hostname } = new URL(url);
        if (protocol === 'data:' || protocol === 'blob:' || protocol === 'about:') return false;
        return !hosts.includes(hostname);
      }),
  };
}
