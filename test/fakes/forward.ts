import type { IncomingMessage } from 'node:http';

// What the webhook proxies (test/fakes/webhook-proxy.ts, scripts/chaos/proxy.ts) share: read a
// delivery's raw body, and send it on unchanged to the service.

export async function readRawBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export interface Forwarded {
  status: number;
  contentType: string;
  text: string;
}

/** Forwards the request (its headers but host, length and connection) to `target` + its path. */
export async function forwardRaw(
  req: IncomingMessage,
  rawBody: string,
  target: string,
  timeoutMs = 30_000,
): Promise<Forwarded> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string' && !['host', 'content-length', 'connection'].includes(name)) {
      headers[name] = value;
    }
  }
  const forwarded = await fetch(`${target}${req.url ?? '/'}`, {
    method: req.method ?? 'POST',
    headers,
    body: rawBody,
    signal: AbortSignal.timeout(timeoutMs),
  });
  return {
    status: forwarded.status,
    contentType: forwarded.headers.get('content-type') ?? 'text/plain',
    text: await forwarded.text(),
  };
}
