import { setTimeout as sleep } from 'node:timers/promises';
// Sends one batch of rows to POST /api/contacts/import and returns its result: a 202 is
// followed by polling GET /api/contacts/import/{job_id}; 429 and 503 are retried after their
// Retry-After; a batch too large for the body limit (413 payload_too_large) is split in two.

export interface BatchResult {
  imported: number;
  duplicates: number;
  errors: number;
  /** Indexes are positions in the batch as sent. */
  error_rows: Array<{ index: number; reason: string }>;
}

export class ImportError extends Error {
  /** The CSV lines (first, last) of the batch that failed, when the caller knows them. */
  lines?: [number, number];
}

export interface ImportTarget {
  baseUrl: string;
  token: string;
  firm: string;
  defaultCountry: string | undefined;
}

const MAX_RETRIES = 8;
const POLL_MS = 500;
/** What the service answered: JSON bodies as parsed (the fields read are checked where read). */
interface Reply {
  status: number;
  body: Record<string, unknown> | string;
  retryAfterMs: number;
}

const field = (reply: Reply, name: string): unknown =>
  typeof reply.body === 'object' && reply.body !== null ? reply.body[name] : undefined;

async function call(
  target: ImportTarget,
  method: 'GET' | 'POST',
  path: string,
  body?: string,
): Promise<Reply> {
  for (let attempt = 1; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(`${target.baseUrl}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${target.token}`,
          ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(120_000),
      });
    } catch (err) {
      // The service may have taken the batch before the connection failed: sent again, its
      // rows count as duplicates, never as second contacts.
      if (attempt >= MAX_RETRIES) throw new ImportError(`${method} ${path}: ${(err as Error).message}`);
      await sleep(Math.min(30_000, 500 * 2 ** attempt));
      continue;
    }
    const text = await res.text();
    let parsed: Reply['body'] = text;
    try {
      const json: unknown = JSON.parse(text);
      if (typeof json === 'object' && json !== null && !Array.isArray(json))
        parsed = json as Record<string, unknown>;
    } catch {
      // not JSON: reported as text
    }
    const retryAfter = Number(res.headers.get('retry-after'));
    const retryAfterMs =
      Number.isFinite(retryAfter) && retryAfter > 0 ? Math.min(retryAfter, 60) * 1000 : 1000;
    if ((res.status === 429 || res.status === 503) && attempt < MAX_RETRIES) {
      await sleep(retryAfterMs);
      continue;
    }
    return { status: res.status, body: parsed, retryAfterMs };
  }
}

function failure(reply: Reply, what: string): ImportError {
  const error = field(reply, 'error') as { code?: string; message?: string } | undefined;
  const text = error ? `${error.code}: ${error.message}` : String(reply.body).slice(0, 300);
  return new ImportError(`${what} answered ${reply.status} (${text})`);
}

async function waitForJob(target: ImportTarget, jobId: string): Promise<BatchResult> {
  for (;;) {
    const reply = await call(target, 'GET', `/api/contacts/import/${encodeURIComponent(jobId)}`);
    if (reply.status === 202) {
      await sleep(POLL_MS);
      continue;
    }
    if (reply.status !== 200) throw failure(reply, `Import job ${jobId}`);
    if (field(reply, 'status') === 'failed') {
      throw new ImportError(`Import job ${jobId} failed: ${String(field(reply, 'message'))}`);
    }
    return reply.body as unknown as BatchResult;
  }
}

/** Imports `rows`; the result's indexes refer to `rows`. */
export async function importBatch(target: ImportTarget, rows: unknown[]): Promise<BatchResult> {
  const body = JSON.stringify({
    firmSlug: target.firm,
    contacts: rows,
    ...(target.defaultCountry === undefined ? {} : { defaultCountry: target.defaultCountry }),
  });
  const reply = await call(target, 'POST', '/api/contacts/import', body);
  const code = (field(reply, 'error') as { code?: string } | undefined)?.code;
  if (reply.status === 413 && code === 'payload_too_large' && rows.length > 1) {
    // Very long cells: the same rows in two requests.
    const half = Math.ceil(rows.length / 2);
    const first = await importBatch(target, rows.slice(0, half));
    const second = await importBatch(target, rows.slice(half));
    return {
      imported: first.imported + second.imported,
      duplicates: first.duplicates + second.duplicates,
      errors: first.errors + second.errors,
      error_rows: [...first.error_rows, ...second.error_rows.map((r) => ({ ...r, index: r.index + half }))],
    };
  }
  if (reply.status === 202) return waitForJob(target, String(field(reply, 'job_id')));
  if (reply.status !== 200) throw failure(reply, 'POST /api/contacts/import');
  return reply.body as unknown as BatchResult;
}
