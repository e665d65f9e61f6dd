// A small stand-in for the OpenAI API on 127.0.0.1: POST /v1/chat/completions with the real
// request and response JSON shapes. It checks the bearer key, records every request, and can
// be told to answer with errors (429 with Retry-After, 500) once or for every request. It
// refuses, with OpenAI's 400 invalid_request_error and the offending `param`, what the API
// refuses (openai-node's ChatCompletionCreateParams, platform.openai.com/docs/api-reference/chat
// and the structured-outputs guide): a parameter the API does not have, no model, no messages or
// none, a message of an unknown role or without the content its role needs, a temperature
// outside 0 to 2, a response_format of an unknown type, a json_schema whose name is not
// [a-zA-Z0-9_-]{1,64} or, when strict, an object schema anywhere in it that does not list every
// property as required and set additionalProperties: false.
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

/** OpenAI's 400 for a request it refuses, naming the parameter. */
function sendInvalid(res: ServerResponse, refusal: Refusal) {
  sendJson(res, 400, {
    error: { message: refusal.message, type: 'invalid_request_error', param: refusal.param, code: null },
  });
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

/** The parameters of a chat completion request (openai-node's ChatCompletionCreateParamsBase). */
const PARAMETERS = new Set([
  'messages',
  'model',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
]);
const ROLES = ['system', 'assistant', 'user', 'function', 'tool', 'developer'];

/** What OpenAI refuses in a request: its message and the parameter it names; null when fine. */
interface Refusal {
  message: string;
  param: string | null;
}

const isObject = (v: unknown): v is Record<string, any> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A strict json_schema's object schemas, each closed and fully required (recursively). */
function strictSchemaProblem(schema: unknown, where: string): string | null {
  if (Array.isArray(schema)) {
    for (const [i, item] of schema.entries()) {
      const problem = strictSchemaProblem(item, `${where}[${i}]`);
      if (problem !== null) return problem;
    }
    return null;
  }
  if (!isObject(schema)) return null;
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  if (types.includes('object') || isObject(schema.properties)) {
    const keys = Object.keys(schema.properties ?? {});
    const required: unknown[] = Array.isArray(schema.required) ? schema.required : [];
    const missing = keys.filter((k) => !required.includes(k));
    if (missing.length > 0) {
      return `In context=${where}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing[0]}'.`;
    }
    if (schema.additionalProperties !== false) {
      return `In context=${where}, 'additionalProperties' is required to be supplied and to be false.`;
    }
  }
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'enum' || key === 'const' || key === 'required') continue;
    const problem = strictSchemaProblem(value, `${where}.${key}`);
    if (problem !== null) return problem;
  }
  return null;
}

/** A message's content as its role needs it (a string, or an array of parts; null only for some). */
function contentProblem(message: Record<string, any>, at: string): Refusal | null {
  const content = message.content;
  const param = `${at}.content`;
  if (content === undefined || content === null) {
    const mayBeNull =
      message.role === 'assistant' &&
      (Array.isArray(message.tool_calls) || isObject(message.function_call) || 'refusal' in message);
    return mayBeNull || message.role === 'function'
      ? null
      : { message: `Missing required parameter: '${param}'.`, param };
  }
  if (typeof content === 'string') return null;
  if (Array.isArray(content) && content.every((part) => isObject(part) && typeof part.type === 'string'))
    return null;
  return {
    message: `Invalid type for '${param}': expected one of a string or an array of objects, but got ${typeof content} instead.`,
    param,
  };
}

/** What OpenAI would refuse in a chat completion request (null when it takes it). */
function requestProblem(body: unknown): Refusal | null {
  if (!isObject(body)) return { message: 'The request body must be a JSON object.', param: null };
  const unknown = Object.keys(body).find((k) => !PARAMETERS.has(k));
  if (unknown !== undefined)
    return { message: `Unrecognized request argument supplied: ${unknown}`, param: null };
  if (typeof body.model !== 'string' || body.model === '')
    return { message: "Missing required parameter: 'model'.", param: 'model' };
  if (!Array.isArray(body.messages))
    return { message: "Missing required parameter: 'messages'.", param: 'messages' };
  if (body.messages.length === 0) return { message: "[] is too short - 'messages'", param: 'messages' };
  for (const [i, message] of (body.messages as unknown[]).entries()) {
    const at = `messages[${i}]`;
    if (!isObject(message)) {
      return {
        message: `Invalid type for '${at}': expected an object, but got ${typeof message} instead.`,
        param: at,
      };
    }
    if (!ROLES.includes(message.role)) {
      return {
        message: `Invalid value: '${String(message.role)}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        param: `${at}.role`,
      };
    }
    const problem = contentProblem(message, at);
    if (problem !== null) return problem;
    if (message.role === 'tool' && typeof message.tool_call_id !== 'string') {
      return { message: `Missing required parameter: '${at}.tool_call_id'.`, param: `${at}.tool_call_id` };
    }
  }
  const temperature = body.temperature;
  if (temperature !== undefined && temperature !== null) {
    if (typeof temperature !== 'number' || temperature < 0 || temperature > 2) {
      return {
        message: `Invalid 'temperature': expected a number from 0 to 2, but got ${JSON.stringify(temperature)} instead.`,
        param: 'temperature',
      };
    }
  }
  const format = body.response_format;
  if (format === undefined || format === null) return null;
  if (!isObject(format) || !['text', 'json_object', 'json_schema'].includes(format.type)) {
    return {
      message:
        "Invalid value for 'response_format.type': supported values are 'text', 'json_object' and 'json_schema'.",
      param: 'response_format.type',
    };
  }
  if (format.type !== 'json_schema') return null;
  const jsonSchema = format.json_schema;
  if (!isObject(jsonSchema) || typeof jsonSchema.name !== 'string') {
    return {
      message: "Missing required parameter: 'response_format.json_schema.name'.",
      param: 'response_format.json_schema.name',
    };
  }
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(jsonSchema.name)) {
    return {
      message: `Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
      param: 'response_format.json_schema.name',
    };
  }
  if (jsonSchema.strict === true) {
    const schema = jsonSchema.schema;
    const problem = !isObject(schema)
      ? 'A strict json_schema needs a schema.'
      : schema.type !== 'object'
        ? 'In context=(), schema must be a JSON Schema of \'type: "object"\'.'
        : strictSchemaProblem(schema, '()');
    if (problem !== null) {
      return {
        message: `Invalid schema for response_format '${jsonSchema.name}': ${problem}`,
        param: 'response_format',
      };
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
      const refusal = requestProblem(body);
      if (refusal !== null) return sendInvalid(res, refusal);
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
