// What the web itself says about a run: its request counts (/metrics) and its error log.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { outDir } from './settings.js';

/** The web's own count of the requests it answered, by status (its /metrics). */
export async function answeredByStatus(base: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  try {
    const text = await (await fetch(`${base}/metrics`)).text();
    for (const m of text.matchAll(
      /^http_request_duration_seconds_count\{[^}]*status="(\d+)"[^}]*\} (\d+)/gm,
    )) {
      counts[m[1]!] = (counts[m[1]!] ?? 0) + Number(m[2]);
    }
  } catch {
    // the web is gone; the crash is reported elsewhere
  }
  return counts;
}

export function diffCounts(
  after: Record<string, number>,
  before: Record<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

/** What the web logged for a request id that failed with a 5xx (pino JSON lines). */
export async function serverLogIndex(): Promise<Map<string, string>> {
  const index = new Map<string, string>();
  const text = await readFile(join(outDir, 'web.log'), 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const entry = JSON.parse(line) as {
        level?: number;
        requestId?: string;
        err?: { type?: string; message?: string };
      };
      if ((entry.level ?? 0) >= 50 && entry.requestId !== undefined && entry.err !== undefined) {
        index.set(
          entry.requestId,
          `${entry.err.type ?? 'Error'}: ${(entry.err.message ?? '').slice(0, 200)}`,
        );
      }
    } catch {
      // not a log line
    }
  }
  return index;
}
