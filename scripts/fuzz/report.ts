// Reads one Schemathesis run's JSON report and NDJSON event stream into a RunSummary.
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { RunResult } from './schemathesis.js';
import { settings } from './settings.js';

export interface Recorded {
  request: {
    method: string;
    uri: string;
    headers?: Record<string, string[]>;
    body?: { $base64?: string } | null;
  };
  response?: {
    status_code: number;
    headers?: Record<string, string[]>;
    content?: { $base64?: string } | null;
  } | null;
}

interface CheckResult {
  name: string;
  status: string;
  failure_info?: { failure?: { code?: string; title?: string; message?: string } };
}

export interface ServerError {
  status: number;
  method: string;
  path: string;
  interaction: Recorded;
}

/**
 * The codes of a 502 (core/platform/errors.ts `badGateway`): an outside system (Cal.com, OpenAI,
 * Clio, RingCentral) refused us or could not be reached. The fuzzer may give a firm such a
 * provider (a `settings.booking` with Cal.com's own base URL and a made-up key), which this machine
 * cannot reach or which refuses the key: the service's answer is then right, and says nothing of a
 * defect of ours. Reported beside the findings, never gated.
 */
export const OUTSIDE_SYSTEM_CODES = new Set([
  'booking_provider_error',
  'chat_engine_error',
  'clio_unavailable',
  'ringcentral_unavailable',
]);

/** What a `not_a_server_error` failure is counted under when it is such a 502 (not gated). */
export const OUTSIDE_SYSTEM_CHECK = 'outside_system_error';

export interface RunSummary {
  label: string;
  seconds: number;
  testCases: number;
  requestsSent: number;
  requestsAnswered: Record<string, number>;
  failuresByCheck: Record<string, number>;
  failureExamples: Map<string, string>;
  serverErrors: ServerError[];
  /** 502s in the error shape with an outside system's code (OUTSIDE_SYSTEM_CODES). */
  outsideSystemErrors: ServerError[];
  /** Errors that may be the service's (network errors, an invalid document, ...). */
  errors: string[];
  /** The tool's own crashes: an exception inside Schemathesis, Hypothesis or hooks.py. */
  toolCrashes: string[];
  complete: boolean;
  /** 1, or 2 when the first attempt crashed and this is its retry with the same seed. */
  attempt: number;
}

/**
 * Schemathesis's titles for an exception of its own making (report.json's errors): "Runtime
 * Error" is any exception it does not classify (a SystemError inside Hypothesis was one), "Hook
 * Error" one raised in hooks.py. Its other titles (Network Error, Schema Error, Server
 * Unavailable, Unresponsive Operation, Failed Health Check, ...) name something about the
 * service or its document.
 */
const TOOL_ERROR_TITLES = new Set(['Runtime Error', 'Hook Error']);

/** Exception types of requests and of Schemathesis's outage detection: the service's side. */
const NETWORK_ERROR =
  /^(\w*Connection\w*|\w*Timeout|ChunkedEncodingError|SSLError|\w*Unavailable|\w*Unresponsive\w*|\w*Unhealthy\w*):/;

interface EngineError {
  value?: { type?: string; message?: string };
  phase?: string;
  label?: string;
}

const describeError = (e: EngineError): string =>
  `${e.value?.type ?? 'Error'}: ${(e.value?.message ?? '').split('\n')[0]!.slice(0, 200)}` +
  `${e.label === undefined ? '' : ` on ${e.label}`}${e.phase === undefined ? '' : ` (${e.phase} phase)`}`;

export const decode = (b: { $base64?: string } | null | undefined): string =>
  b?.$base64 === undefined ? '' : Buffer.from(b.$base64, 'base64').toString('utf8');

export async function readRun(r: RunResult, answered: Record<string, number>): Promise<RunSummary> {
  const summary: RunSummary = {
    label: r.label,
    seconds: r.durationMs / 1000,
    testCases: 0,
    requestsSent: 0,
    requestsAnswered: answered,
    failuresByCheck: {},
    failureExamples: new Map(),
    serverErrors: [],
    outsideSystemErrors: [],
    errors: [],
    toolCrashes: [],
    complete: false,
    attempt: r.attempt,
  };
  if (r.timedOut) summary.errors.push(`stopped after FUZZ_RUN_TIMEOUT (${settings.runTimeout} s)`);
  const report = await readFile(join(r.reportDir, 'report.json'), 'utf8').catch(() => null);
  if (report === null) {
    // Schemathesis writes its reports even when it stops before testing: none means it died.
    if (!r.timedOut) summary.toolCrashes.push(`schemathesis exited ${r.exitCode} without a report`);
    return summary;
  }
  const json = JSON.parse(report) as {
    complete?: boolean;
    test_cases?: { generated?: number };
    errors?: { title?: string; count?: number }[];
  };
  summary.complete = json.complete === true;
  summary.testCases = json.test_cases?.generated ?? 0;
  let toolErrors = 0;
  for (const e of json.errors ?? []) {
    if (TOOL_ERROR_TITLES.has(e.title ?? '')) toolErrors += e.count ?? 1;
    else summary.errors.push(`${e.title ?? 'Error'} (${e.count ?? 1}x)`);
  }
  /** The tool's errors as the event stream tells them (type, message, operation, phase). */
  const errorEvents: string[] = [];

  const events = createInterface({ input: createReadStream(join(r.reportDir, 'events.ndjson')) });
  for await (const line of events) {
    if (line.startsWith('{"FatalError"')) {
      // The engine itself stopped on an exception.
      summary.toolCrashes.push(
        `fatal: ${describeError((JSON.parse(line) as { FatalError: EngineError }).FatalError)}`,
      );
      continue;
    }
    if (line.startsWith('{"NonFatalError"')) {
      errorEvents.push(describeError((JSON.parse(line) as { NonFatalError: EngineError }).NonFatalError));
      continue;
    }
    if (!line.startsWith('{"ScenarioFinished"')) continue;
    const recorder = (
      JSON.parse(line) as {
        ScenarioFinished: {
          recorder: {
            label: string;
            checks?: Record<string, CheckResult[]>;
            interactions?: Record<string, Recorded>;
          };
        };
      }
    ).ScenarioFinished.recorder;
    const path = recorder.label.split(' ')[1] ?? recorder.label;
    for (const interaction of Object.values(recorder.interactions ?? {})) {
      summary.requestsSent += 1;
      const status = interaction.response?.status_code ?? 0;
      if (status < 500) continue;
      const error = { status, method: interaction.request.method, path, interaction };
      (outsideSystemAnswer(interaction) ? summary.outsideSystemErrors : summary.serverErrors).push(error);
    }
    for (const [caseId, checks] of Object.entries(recorder.checks ?? {})) {
      for (const check of checks) {
        if (check.status !== 'failure') continue;
        const name =
          check.name === 'not_a_server_error' && outsideSystemAnswer(recorder.interactions?.[caseId])
            ? OUTSIDE_SYSTEM_CHECK
            : check.name;
        summary.failuresByCheck[name] = (summary.failuresByCheck[name] ?? 0) + 1;
        const failure = check.failure_info?.failure;
        const answer = describeResponse(recorder.interactions?.[caseId]);
        const key = `${name} ${recorder.label} -> ${answer}`;
        if (!summary.failureExamples.has(key)) {
          const detail = (failure?.message ?? '').split('\n')[0] || failure?.title || '';
          summary.failureExamples.set(key, `${failure?.code ?? ''} ${detail}`.trim());
        }
      }
    }
  }
  if (toolErrors > 0) {
    // The events carry no title: leave out the ones that name the network, to show the tool's.
    const shown = errorEvents.filter((e) => !NETWORK_ERROR.test(e));
    const more = shown.length > 1 ? ` (and ${shown.length - 1} more)` : '';
    summary.toolCrashes.push(`${toolErrors} Runtime/Hook Errors inside the tool: ${shown[0] ?? ''}${more}`);
  } else if (!summary.complete && !r.timedOut && summary.toolCrashes.length === 0) {
    summary.toolCrashes.push(`schemathesis exited ${r.exitCode} before the run completed`);
  }
  return summary;
}

/** The error code of a recorded response in the error shape, else ''. */
function errorCode(i: Recorded): string {
  try {
    return (JSON.parse(decode(i.response?.content)) as { error?: { code?: string } }).error?.code ?? '';
  } catch {
    return ''; // not JSON
  }
}

/** A 502 in the error shape naming an outside system (OUTSIDE_SYSTEM_CODES). */
export function outsideSystemAnswer(i: Recorded | undefined): boolean {
  return i?.response?.status_code === 502 && OUTSIDE_SYSTEM_CODES.has(errorCode(i));
}

/** "400 unknown_voice": the status and the error code of a recorded response. */
function describeResponse(i: Recorded | undefined): string {
  if (i?.response == null) return 'no response';
  const code = errorCode(i);
  return `${i.response.status_code}${code === '' ? '' : ` ${code}`}`;
}
