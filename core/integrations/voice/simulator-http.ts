import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

// The simulator's requests to the firm's public call webhook and tools (PUBLIC_BASE_URL): node:http
// over Node's kept-alive default agents, which costs the worker about half of what `fetch` costs
// a request (undici's Request, Headers and Response objects and its streams, around the same
// socket writes). The HTTP instrumentation traces node:http client calls as it traces the
// effects' (core/integrations/http/guarded-http.ts), so with tracing on a delivery still carries
// its call's trace (`traceparent`) into the web's handling of it.

export interface SimulatorAnswer {
  status: number;
  /** A 2xx. */
  ok: boolean;
  /** The answer's body as text, at most MAX_ANSWER_BYTES of it. */
  text: string;
}

/** What is read of an answer: the service answers a delivery or a tool call in a few hundred bytes. */
const MAX_ANSWER_BYTES = 1024 * 1024;

/** POSTs `body` (JSON) to `url`; the whole exchange bounded by `timeoutMs`. */
export function postJson(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs: number,
): Promise<SimulatorAnswer> {
  const target = new URL(url);
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<SimulatorAnswer>((resolve, reject) => {
    const req = send(
      target,
      {
        method: 'POST',
        headers: {
          ...headers,
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(body)),
        },
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (size >= MAX_ANSWER_BYTES) return;
          size += chunk.length;
          chunks.push(chunk);
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          resolve({
            status,
            ok: status >= 200 && status <= 299,
            text: Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8'),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
