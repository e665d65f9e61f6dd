// A small stand-in for the OpenAI API on 127.0.0.1: POST /v1/chat/completions with the real
// request and response JSON shapes. It checks the bearer key, records every request, and can
// be told to answer with errors (429 with Retry-After, 500) once or for every request.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | undefined;
  body: any;
}

export interface FakeOpenAi {
  /** The base URL to give the SDK (OPENAI_BASE_URL), ending in /v1. */
  url: string;
  /** The key the server accepts; any other gets OpenAI's 401. */
  apiKey: string;
  requests: RecordedRequest[];
  /** Statuses to answer with, one per request, before answering normally again. */
  failNext: number[];
  /** A status to answer every request with (null: answer normally). */
  failAlways: number | null;
  /** The assistant's reply to a request; by default it echoes the last user message. */
  respond: (body: any) => string;
  /**
   * The JSON object answered to a structured-output request (response_format json_schema); it is
   * checked against the request's schema's required keys. By default every field is null.
   */
  respondStructured: (body: any) => Record<string, unknown>;
  reset(): void;
  close(): Promise<void>;
}

const ERRORS: Record<number, { message: string; type: string; code: string | null }> = {
  400: { message: 'Invalid request.', type: 'invalid_request_error', code: null },
  401: {
    message:
      'Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.',
    type: 'invalid_request_error',
    code: 'invalid_api_key',
  },
  429: {
    message: 'Rate limit reached for requests. Please try again in 20ms.',
    type: 'requests',
    code: 'rate_limit_exceeded',
  },
  500: {
    message: 'The server had an error while processing your request.',
    type: 'server_error',
    code: null,
  },
  503: {
    message: 'The engine is currently overloaded, please try again later.',
    type: 'server_error',
    code: null,
  },
};

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function sendError(res: ServerResponse, status: number) {
  const error = ERRORS[status] ?? { message: `Error ${status}.`, type: 'server_error', code: null };
  // OpenAI's 429s carry retry headers; a short one keeps the SDK's retry quick in tests.
  const headers: Record<string, string> =
    status === 429 ? { 'retry-after-ms': '20', 'retry-after': '1' } : {};
  sendJson(res, status, { error: { ...error, param: null } }, headers);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

let counter = 0;

/** The default structured answer: null for every property the schema names. */
function nullFields(body: any): Record<string, unknown> {
  const properties = body.response_format?.json_schema?.schema?.properties ?? {};
  return Object.fromEntries(Object.keys(properties).map((k) => [k, null]));
}

/** A structured-output request that is malformed as OpenAI would judge it (null when fine). */
function structuredProblem(body: any): string | null {
  const format = body.response_format;
  if (format?.type !== 'json_schema') return null;
  const schema = format.json_schema?.schema;
  if (typeof format.json_schema?.name !== 'string' || typeof schema !== 'object' || schema === null) {
    return 'response_format.json_schema needs a name and a schema.';
  }
  if (format.json_schema.strict === true) {
    const keys = Object.keys(schema.properties ?? {}).sort();
    const required = [...(schema.required ?? [])].sort();
    if (schema.additionalProperties !== false || JSON.stringify(keys) !== JSON.stringify(required)) {
      return 'A strict json_schema must list every property as required and set additionalProperties: false.';
    }
  }
  return null;
}

/** The default reply: names the last user message, so a test can tell replies apart. */
function echo(body: any): string {
  const users = (body.messages as Array<{ role: string; content: string }>).filter((m) => m.role === 'user');
  return `LLM reply to: ${users[users.length - 1]?.content ?? ''}`;
}

export async function startFakeOpenAi(apiKey = 'sk-test'): Promise<FakeOpenAi> {
  const fake: Omit<FakeOpenAi, 'url' | 'close'> = {
    apiKey,
    requests: [],
    failNext: [],
    failAlways: null,
    respond: echo,
    respondStructured: nullFields,
    reset() {
      this.requests.length = 0;
      this.failNext.length = 0;
      this.failAlways = null;
      this.apiKey = apiKey;
      this.respond = echo;
      this.respondStructured = nullFields;
    },
  };

  const server = createServer((req, res) => {
    void (async () => {
      const text = await readBody(req);
      const path = (req.url ?? '').split('?')[0] ?? '';
      if (req.method !== 'POST' || path !== '/v1/chat/completions') {
        sendJson(res, 404, {
          error: { message: `Unknown route ${req.method} ${path}`, type: 'invalid_request_error' },
        });
        return;
      }
      let body: any;
      try {
        body = JSON.parse(text);
      } catch {
        sendError(res, 400);
        return;
      }
      fake.requests.push({ method: req.method, path, authorization: req.headers.authorization, body });
      if (req.headers.authorization !== `Bearer ${fake.apiKey}`) return sendError(res, 401);
      const failure = fake.failNext.shift() ?? fake.failAlways;
      if (failure !== null && failure !== undefined) return sendError(res, failure);
      if (typeof body.model !== 'string' || !Array.isArray(body.messages)) return sendError(res, 400);
      if (structuredProblem(body) !== null) return sendError(res, 400);
      const content =
        body.response_format?.type === 'json_schema'
          ? JSON.stringify(fake.respondStructured(body))
          : fake.respond(body);
      counter += 1;
      sendJson(res, 200, {
        id: `chatcmpl-fake${counter}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content, refusal: null, annotations: [] },
            logprobs: null,
            finish_reason: 'stop',
          },
        ],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        system_fingerprint: 'fp_fake',
      });
    })().catch(() => {
      if (!res.headersSent) sendError(res, 500);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(fake, {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
