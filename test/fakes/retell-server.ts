import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

// A small local server that speaks the Retell endpoints retell-sdk 5.66 calls (paths taken
// from node_modules/retell-sdk/src/resources/{call,voice}.ts): it checks the bearer key,
// records every request, keeps the calls it created, and can be told to answer with errors,
// to delay, or to hold responses (the call is still created: "the provider got it").

export type RetellEndpoint = 'create-phone-call' | 'get-call' | 'list-calls' | 'list-voices';

export interface RecordedRequest {
  endpoint: RetellEndpoint | 'unknown';
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  at: number;
}

export interface ScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  delayMs?: number;
}

export interface FakeRetellCall {
  call_id: string;
  call_type: 'phone_call';
  agent_id: string;
  agent_version: number;
  call_status: 'registered' | 'ongoing' | 'ended' | 'not_connected' | 'error';
  direction: 'outbound';
  from_number: string;
  to_number: string;
  metadata?: unknown;
  retell_llm_dynamic_variables?: Record<string, string>;
  start_timestamp?: number;
}

export const FAKE_VOICES = [
  {
    voice_id: '11labs-Adrian',
    voice_name: 'Adrian',
    provider: 'elevenlabs',
    gender: 'male',
    accent: 'American',
    age: 'Young',
    preview_audio_url: 'https://retell-utils-public.s3.us-west-2.amazonaws.com/adrian.mp3',
  },
  { voice_id: 'openai-Alloy', voice_name: 'Alloy', provider: 'openai', gender: 'female', accent: 'British' },
  {
    voice_id: 'cartesia-Lucia',
    voice_name: 'Lucía',
    provider: 'cartesia',
    gender: 'female',
    accent: 'Mexican',
  },
];

export interface RetellFake {
  url: string;
  apiKey: string;
  requests: RecordedRequest[];
  calls: FakeRetellCall[];
  requestsTo(endpoint: RetellEndpoint): RecordedRequest[];
  /** Answers the next requests to `endpoint` with these responses, in order, before behaving normally. */
  script(endpoint: RetellEndpoint, ...responses: ScriptedResponse[]): void;
  /** Holds responses to `endpoint` (requests are still recorded and acted on) until release(). */
  hold(endpoint: RetellEndpoint): void;
  release(): void;
  close(): Promise<void>;
}

function endpointOf(method: string, path: string): RetellEndpoint | 'unknown' {
  if (method === 'POST' && path === '/v2/create-phone-call') return 'create-phone-call';
  if (method === 'GET' && path.startsWith('/v2/get-call/')) return 'get-call';
  if (method === 'POST' && path === '/v3/list-calls') return 'list-calls';
  if (method === 'GET' && path === '/list-voices') return 'list-voices';
  return 'unknown';
}

async function readBody(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(body === undefined ? '' : JSON.stringify(body));
}

export async function startRetellFake(
  apiKey = `key_${randomBytes(12).toString('hex')}`,
): Promise<RetellFake> {
  const requests: RecordedRequest[] = [];
  const calls: FakeRetellCall[] = [];
  const scripts = new Map<RetellEndpoint, ScriptedResponse[]>();
  const holding = new Set<RetellEndpoint>();
  let held: Array<() => void> = [];

  function matchesFilter(call: FakeRetellCall, filter: any): boolean {
    for (const f of (filter?.metadata ?? []) as Array<{ key: string; op: string; value: unknown }>) {
      const value = (call.metadata as Record<string, unknown> | undefined)?.[f.key];
      if (f.op === 'eq' && value !== f.value) return false;
    }
    return true;
  }

  function answer(endpoint: RetellEndpoint, path: string, body: any): { status: number; body: unknown } {
    switch (endpoint) {
      case 'create-phone-call': {
        if (typeof body?.from_number !== 'string' || typeof body?.to_number !== 'string') {
          return { status: 400, body: { error_message: 'from_number and to_number are required' } };
        }
        const call: FakeRetellCall = {
          call_id: randomBytes(16).toString('hex'),
          call_type: 'phone_call',
          agent_id: body.override_agent_id ?? 'oBeDLoLOeuAbiuaMFXRtDOLriTJ5tSxD',
          agent_version: 1,
          call_status: 'registered',
          direction: 'outbound',
          from_number: body.from_number,
          to_number: body.to_number,
          metadata: body.metadata,
          retell_llm_dynamic_variables: body.retell_llm_dynamic_variables,
        };
        calls.push(call);
        return { status: 201, body: call };
      }
      case 'get-call': {
        const call = calls.find((c) => c.call_id === decodeURIComponent(path.split('/').pop() ?? ''));
        return call
          ? { status: 200, body: call }
          : { status: 404, body: { error_message: 'Call not found' } };
      }
      case 'list-calls': {
        const items = calls
          .filter((c) => matchesFilter(c, body?.filter_criteria))
          .reverse()
          .slice(0, Number(body?.limit ?? 50));
        return { status: 200, body: { items, has_more: false } };
      }
      case 'list-voices':
        return { status: 200, body: FAKE_VOICES };
    }
  }

  const server = createServer((req, res) => {
    void (async () => {
      const method = req.method ?? 'GET';
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const endpoint = endpointOf(method, path);
      const body = await readBody(req);
      requests.push({ endpoint, method, path, headers: req.headers, body, at: Date.now() });
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        send(res, 401, { error_message: 'Invalid API key' });
        return;
      }
      if (endpoint === 'unknown') {
        send(res, 404, { error_message: `No route ${method} ${path}` });
        return;
      }
      const scripted = scripts.get(endpoint)?.shift();
      if (scripted !== undefined) {
        if (scripted.delayMs) await sleep(scripted.delayMs);
        send(
          res,
          scripted.status,
          scripted.body ?? { error_message: `scripted ${scripted.status}` },
          scripted.headers,
        );
        return;
      }
      const result = answer(endpoint, path, body);
      if (holding.has(endpoint)) {
        held.push(() => send(res, result.status, result.body));
        return;
      }
      send(res, result.status, result.body);
    })().catch(() => send(res, 500, { error_message: 'fake failed' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    requests,
    calls,
    requestsTo: (endpoint) => requests.filter((r) => r.endpoint === endpoint),
    script(endpoint, ...responses) {
      scripts.set(endpoint, [...(scripts.get(endpoint) ?? []), ...responses]);
    },
    hold(endpoint) {
      holding.add(endpoint);
    },
    release() {
      holding.clear();
      const pending = held;
      held = [];
      for (const respond of pending) respond();
    },
    async close() {
      holding.clear();
      held = [];
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The environment that points the service's Retell provider at this fake. */
export function retellEnv(fake: RetellFake): Record<string, string> {
  return { VOICE_PROVIDER: 'retell', RETELL_API_KEY: fake.apiKey, RETELL_BASE_URL: fake.url };
}
