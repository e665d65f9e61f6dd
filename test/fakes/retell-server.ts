import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PhoneCallResponse } from 'retell-sdk/resources/call';
import type { VoiceResponse } from 'retell-sdk/resources/voice';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadSpec, SpecViolations } from './spec/openapi-spec.js';

// A small local server that speaks the Retell endpoints our client calls, judged by Retell's own
// types: test/fakes/spec/retell.json, derived from retell-sdk's .d.ts files by
// `npm run providers:derive` (docs/fakes.md). Every request is checked against it (the operation,
// the bearer credentials, the JSON body with its enums and required fields); one that does not
// conform is refused as Retell refuses it — 401 `{status: "error", message}` without a valid key,
// 400 with Retell's "Invalid request format" message otherwise — and every answer the fake builds
// is checked too (a non-conforming one fails the test at close()). It records every request,
// keeps the calls it created, and can be told to answer with errors, to delay, or to hold
// responses (the call is still created: "the provider got it").

export type RetellEndpoint = 'create-phone-call' | 'list-calls' | 'get-call' | 'list-voices';

const spec = loadSpec('retell');
const ENDPOINTS: Record<string, RetellEndpoint> = {
  createPhoneCall: 'create-phone-call',
  listCalls: 'list-calls',
  getCall: 'get-call',
  listVoices: 'list-voices',
};

export interface RecordedRequest {
  endpoint: RetellEndpoint | 'unknown';
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  at: number;
  /** What Retell's document found wrong with the request (empty: it conforms). */
  problems: string[];
}

export interface ScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  /** Default: Retell's error body, `{status: "error", message}`. */
  body?: unknown;
  delayMs?: number;
  /**
   * Answered by what stands in front of Retell's API (a load balancer's 503), not by the API:
   * not judged by its document.
   */
  gateway?: boolean;
}

export type FakeRetellCall = PhoneCallResponse;

export const FAKE_VOICES: VoiceResponse[] = [
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
  /** Stops the server; rejects when an answer it sent was off Retell's document. */
  close(): Promise<void>;
}

/** Retell's error body (its API reference: 400, 401, 402, 422, 429, 500). */
export const retellError = (message: string) => ({ status: 'error' as const, message });

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

function write(
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

  function answer(
    endpoint: RetellEndpoint,
    body: any,
    params: Record<string, string>,
  ): { status: number; body: unknown; judged?: false } {
    switch (endpoint) {
      case 'create-phone-call': {
        const call: FakeRetellCall = {
          call_id: randomBytes(16).toString('hex'),
          call_type: 'phone_call',
          agent_id: body.override_agent_id ?? 'oBeDLoLOeuAbiuaMFXRtDOLriTJ5tSxD',
          agent_version: 1,
          call_status: 'registered',
          direction: 'outbound',
          from_number: body.from_number,
          to_number: body.to_number,
          ...(body.metadata === undefined ? {} : { metadata: body.metadata }),
          ...(body.retell_llm_dynamic_variables === undefined
            ? {}
            : { retell_llm_dynamic_variables: body.retell_llm_dynamic_variables }),
        };
        calls.push(call);
        return { status: 201, body: call };
      }
      case 'list-calls': {
        const items = calls
          .filter((c) => matchesFilter(c, body?.filter_criteria))
          .reverse()
          .slice(0, Number(body?.limit ?? 50));
        return { status: 200, body: { items, has_more: false } };
      }
      case 'get-call': {
        const call = calls.find((c) => c.call_id === params.call_id);
        // Retell's document names no status for an id it does not know; a 404 with its error
        // body, not judged by the document (the client reads any 404 as "no such call").
        if (call === undefined) return { status: 404, body: retellError('Call not found'), judged: false };
        return { status: 200, body: call };
      }
      case 'list-voices':
        return { status: 200, body: FAKE_VOICES };
    }
  }

  const violations = new SpecViolations();

  const server = createServer((req, res) => {
    void (async () => {
      const method = req.method ?? 'GET';
      const [path = '/', search = ''] = (req.url ?? '/').split('?');
      const body = await readBody(req);
      const verdict = spec.checkRequest({
        method,
        path,
        query: new URLSearchParams(search),
        headers: req.headers,
        body,
      });
      const endpoint = ENDPOINTS[verdict.match?.operationId ?? ''] ?? 'unknown';
      requests.push({
        endpoint,
        method,
        path,
        headers: req.headers,
        body,
        at: Date.now(),
        problems: verdict.problems,
      });
      /** Sends an answer, recording where it is off Retell's document. */
      const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
        if (verdict.match) violations.record(spec.checkResponse(verdict.match, status, payload));
        write(res, status, payload, headers);
      };
      if (verdict.match === null) {
        write(res, 404, retellError(`Not Found: ${method} ${path}`));
        return;
      }
      const credentials = verdict.problems.some((p) => p.startsWith('the credentials'));
      if (credentials || req.headers.authorization !== `Bearer ${apiKey}`) {
        send(401, retellError('API key is missing or invalid.'));
        return;
      }
      if (verdict.problems.length > 0) {
        send(
          400,
          retellError(`Invalid request format, please check API reference. (${verdict.problems.join('; ')})`),
        );
        return;
      }
      if (endpoint === 'unknown') throw new Error(`the fake has no answer for ${verdict.match.operationId}`);
      const scripted = scripts.get(endpoint)?.shift();
      if (scripted !== undefined) {
        if (scripted.delayMs) await sleep(scripted.delayMs);
        const payload = scripted.body ?? retellError(`scripted ${scripted.status}`);
        if (scripted.gateway) write(res, scripted.status, payload, scripted.headers);
        else send(scripted.status, payload, scripted.headers);
        return;
      }
      const result = answer(endpoint, body, verdict.match.params);
      const respond = () =>
        result.judged === false ? write(res, result.status, result.body) : send(result.status, result.body);
      if (holding.has(endpoint)) {
        held.push(respond);
        return;
      }
      respond();
    })().catch((err: unknown) => {
      violations.record([`the fake failed: ${(err as Error).message}`]);
      write(res, 500, retellError('fake failed'));
    });
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
      violations.assertNone();
    },
  };
}

/** The environment that points the service's Retell provider at this fake. */
export function retellEnv(fake: RetellFake): Record<string, string> {
  return { VOICE_PROVIDER: 'retell', RETELL_API_KEY: fake.apiKey, RETELL_BASE_URL: fake.url };
}
