// `npm run fuzz`: an outside fuzzer (Schemathesis, from PyPI) against the real stack, driven
// only by the OpenAPI document the service serves at /openapi.json.
//
//  1. local Redis + FerretDB (scripts/local/services.ts) unless REDIS_URL / MONGODB_URI are set,
//     then release, web and worker as child processes (as `npm start` runs them), simulator voices;
//  2. a firm, a firm API key, an agent, a chat and two finished calls, made through the API;
//  3. Schemathesis in a virtual environment under .local/ (installed only when missing);
//  4. two runs over /openapi.json — with the firm key, then with the platform key — every check,
//     every phase (examples, coverage, fuzzing, stateful), a fixed seed and a bounded budget;
//  5. exit 1 on any 5xx or any response the document does not describe (see GATE), else 0.
// What the document says that JSON Schema tools cannot read (a custom format, x-unique-by) is
// taught to Schemathesis by scripts/fuzz/hooks.py.
//
// Knobs (environment): FUZZ_MAX_EXAMPLES (per operation and phase, default 100: about 1.5 min in
// all), FUZZ_MAX_TIME (seconds per run; fuzzing and stateful then repeat until it is spent),
// FUZZ_SEED (default 20240601), FUZZ_WORKERS (default 2), FUZZ_PHASES (default all four),
// FUZZ_RUN_TIMEOUT (seconds a run may take beyond FUZZ_MAX_TIME, default 1800), FUZZ_LOG_LEVEL
// (the apps' LOG_LEVEL, default warn).
// Reports (JSON, NDJSON, JUnit) and the apps' logs go to .local/fuzz/.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { freePort, startLocalServices, type LocalServices } from '../local/services.js';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SCHEMATHESIS_VERSION = '4.32.5';
const venv = join(root, '.local', 'fuzz-venv');
const schemathesisBin = join(venv, 'bin', 'schemathesis');
const outDir = join(root, '.local', 'fuzz');
const FIRM = 'fuzz-firm';

/**
 * The checks whose failures fail the run: a 5xx, and a response the document does not
 * describe (its status, content type, headers or body). The other checks (negative data
 * accepted, valid data rejected, auth, use after free, ...) are reported, not gated.
 */
const GATE = new Set([
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
]);

const say = (line: string): void => void process.stderr.write(`[fuzz] ${line}\n`);

function intEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) {
    say(`${name} must be an integer >= ${min} (got "${raw}")`);
    process.exit(2);
  }
  return n;
}

const settings = {
  maxExamples: intEnv('FUZZ_MAX_EXAMPLES', 100, 1),
  maxTime: process.env.FUZZ_MAX_TIME ? intEnv('FUZZ_MAX_TIME', 0, 1) : undefined,
  /** A run that takes longer than this (seconds) is stopped and fails. */
  runTimeout: intEnv('FUZZ_RUN_TIMEOUT', 1800, 1),
  seed: intEnv('FUZZ_SEED', 20240601, 0),
  workers: intEnv('FUZZ_WORKERS', 2, 1),
  phases: process.env.FUZZ_PHASES || 'examples,coverage,fuzzing,stateful',
  logLevel: process.env.FUZZ_LOG_LEVEL || 'warn',
};

// --- Schemathesis in .local/fuzz-venv ---------------------------------------------------------

async function installedVersion(): Promise<string | null> {
  try {
    const { stdout } = await run(schemathesisBin, ['--version'], { timeout: 60_000 });
    return /version\s+(\S+)/.exec(stdout)?.[1] ?? null;
  } catch {
    return null;
  }
}

async function aptInstall(pkg: string): Promise<boolean> {
  if (process.getuid?.() !== 0) return false;
  say(`installing ${pkg} with apt-get ...`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  try {
    await run('apt-get', ['update'], { env, maxBuffer: 64 * 1024 * 1024 });
    await run('apt-get', ['install', '-y', '--no-install-recommends', pkg], {
      env,
      maxBuffer: 64 * 1024 * 1024,
    });
    return true;
  } catch (err) {
    say(`apt-get install ${pkg} failed: ${(err as Error).message.split('\n')[0]}`);
    return false;
  }
}

async function ensureSchemathesis(): Promise<void> {
  if ((await installedVersion()) === SCHEMATHESIS_VERSION) return;
  say(`installing Schemathesis ${SCHEMATHESIS_VERSION} into ${venv} ...`);
  await rm(venv, { recursive: true, force: true });
  const makeVenv = () => run('python3', ['-m', 'venv', venv], { maxBuffer: 16 * 1024 * 1024 });
  try {
    await makeVenv();
  } catch (err) {
    // Debian's python3 has venv without ensurepip until python3-venv is installed.
    await rm(venv, { recursive: true, force: true });
    const pkg = await debianVenvPackage();
    if (!(await aptInstall(pkg))) {
      throw new Error(
        `python3 -m venv failed (${(err as Error).message.split('\n')[0]}); install ${pkg} (Debian) and retry.`,
      );
    }
    await makeVenv();
  }
  await run(
    join(venv, 'bin', 'python'),
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      `schemathesis==${SCHEMATHESIS_VERSION}`,
    ],
    { maxBuffer: 64 * 1024 * 1024, timeout: 600_000 },
  );
  const version = await installedVersion();
  if (version !== SCHEMATHESIS_VERSION) {
    throw new Error(`pip installed Schemathesis but it reports ${version ?? 'nothing'}`);
  }
}

/** python3.11-venv for Python 3.11, else python3-venv. */
async function debianVenvPackage(): Promise<string> {
  try {
    const { stdout } = await run('python3', [
      '-c',
      'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")',
    ]);
    return `python${stdout.trim()}-venv`;
  } catch {
    return 'python3-venv';
  }
}

// --- the stack ---------------------------------------------------------------------------------

interface Proc {
  name: string;
  child: ChildProcess;
  log: WriteStream;
}

function startProc(entry: string, env: NodeJS.ProcessEnv, name: string): Proc {
  const log = createWriteStream(join(outDir, `${name}.log`));
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, entry)], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log, { end: false });
  child.stderr?.pipe(log, { end: false });
  return { name, child, log };
}

const exited = (c: ChildProcess): boolean => c.exitCode !== null || c.signalCode !== null;

function stopProc(p: Proc, graceMs = 30_000): Promise<void> {
  return new Promise((resolve) => {
    const finish = () => p.log.end(() => resolve());
    if (exited(p.child)) return finish();
    const timer = setTimeout(() => p.child.kill('SIGKILL'), graceMs);
    p.child.once('close', () => {
      clearTimeout(timer);
      finish();
    });
    p.child.kill('SIGTERM');
  });
}

async function waitForReady(url: string, web: Proc, timeoutMs: number): Promise<void> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (exited(web.child)) throw new Error(`web exited with code ${web.child.exitCode}; see ${web.log.path}`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms`);
}

/** The same server, a database of its own (the fuzzer writes thousands of junk records). */
function freshDatabase(uri: string): string {
  const url = new URL(uri);
  url.pathname = `/fuzz_${randomBytes(4).toString('hex')}`;
  return url.toString();
}

// --- fixtures through the API -----------------------------------------------------------------

interface Fixtures {
  firmKey: string;
  agentId: string;
  voiceIds: string[];
  chatId: string;
  callIds: string[];
  /** A real next_cursor of list-calls for the firm. */
  cursor: string;
}

async function api(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as Record<string, unknown> & Array<Record<string, unknown>>;
}

async function makeFixtures(base: string, adminKey: string): Promise<Fixtures> {
  await api(base, adminKey, 'POST', '/api/firms', { slug: FIRM, name: 'Fuzz Firm' });
  const key = await api(base, adminKey, 'POST', '/api/auth/api-keys', { firmSlug: FIRM, name: 'fuzz' });
  const firmKey = String(key.key);
  const voices = await api(base, firmKey, 'GET', '/api/v2/list-voices');
  const voiceIds = voices.map((v) => String(v.voice_id));
  const agent = await api(base, firmKey, 'POST', '/api/v2/create-agent', {
    firmSlug: FIRM,
    agent_name: 'Fuzz Agent',
    voice_id: voiceIds[0],
    intake_questions: [{ key: 'case_type', question: 'What happened?' }],
  });
  const agentId = String(agent.agent_id);
  const chat = await api(base, firmKey, 'POST', '/api/v2/create-chat', { firmSlug: FIRM, agentId });
  const callIds: string[] = [];
  for (const toNumber of ['+14155550123', '+14155550124']) {
    const call = await api(base, firmKey, 'POST', '/api/v2/create-outbound-call', {
      firmSlug: FIRM,
      agentId,
      toNumber,
    });
    callIds.push(String(call.call_id));
  }
  // The simulator finishes both calls in about SIM_CALL_MS; then a page of one has a next page.
  let cursor = '';
  const deadline = Date.now() + 60_000;
  while (cursor === '') {
    if (Date.now() > deadline) throw new Error('the fixture calls did not finish within 60 s');
    await new Promise((r) => setTimeout(r, 250));
    const page = await api(base, firmKey, 'POST', '/api/v2/list-calls', { firmSlug: FIRM, limit: 1 });
    cursor = String(page.next_cursor);
  }
  return { firmKey, agentId, voiceIds, chatId: String(chat.chat_id), callIds, cursor };
}

/** Names that have tripped JavaScript objects and MongoDB queries before. */
const TRICKY_NAMES = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__defineGetter__',
  '$where',
  '$ne',
  '..',
];

/**
 * The run's Schemathesis configuration. Real values are mixed into the generated data so that
 * requests get past "firm not found" and "agent not found" into the handlers (half the time:
 * the other half still asks for unknown ones). Where the document says a value must be one the
 * service issued (a voice of list-voices, a cursor of list-calls), valid test cases always use
 * one; a dictionary only feeds test cases it is valid for, so invalid cases are still generated.
 */
function configToml(f: Fixtures): string {
  const list = (values: string[]) => `[${values.map((v) => JSON.stringify(v)).join(', ')}]`;
  const bind = (dictionary: string, keys: string[], probability: number) =>
    keys.map((k) => `"${k}" = { dictionary = "${dictionary}", probability = ${probability} }`).join('\n');
  return [
    '# Written by scripts/fuzz/run.ts for one run.',
    `hooks = ${JSON.stringify(join(root, 'scripts', 'fuzz', 'hooks.py'))}`,
    '',
    `[dictionaries.firm]\nvalues = ${list([FIRM])}`,
    `[dictionaries.agent]\nvalues = ${list([f.agentId])}`,
    `[dictionaries.voice]\nvalues = ${list(f.voiceIds)}`,
    `[dictionaries.chat]\nvalues = ${list([f.chatId])}`,
    `[dictionaries.call]\nvalues = ${list(f.callIds)}`,
    `[dictionaries.cursor]\nvalues = ${list(['', f.cursor])}`,
    `[dictionaries.tricky]\nvalues = ${list(TRICKY_NAMES)}`,
    '',
    '[generation.dictionaries]',
    'string = { dictionary = "tricky", probability = 0.05 }',
    '',
    '[parameters]',
    bind('firm', ['path.slug', 'path.firm', 'query.firmSlug', 'body.firmSlug'], 0.5),
    bind('agent', ['path.agent_id', 'body.agentId'], 0.5),
    bind('chat', ['path.chat_id', 'body.chatId'], 0.5),
    bind('call', ['path.call_id'], 0.5),
    bind('voice', ['body.voice_id'], 1),
    bind('cursor', ['body.cursor'], 1),
    bind(
      'tricky',
      ['path.file', 'path.id', 'body.intake_questions[*].key', 'body.event', 'body.call.call_id'],
      0.2,
    ),
    '',
  ].join('\n');
}

// --- Schemathesis runs -------------------------------------------------------------------------

interface RunResult {
  label: string;
  exitCode: number;
  durationMs: number;
  reportDir: string;
  timedOut: boolean;
}

let current: ChildProcess | undefined;

async function schemathesis(
  label: string,
  base: string,
  token: string,
  configPath: string,
): Promise<RunResult> {
  const reportDir = join(outDir, label);
  await rm(reportDir, { recursive: true, force: true });
  const args = [
    '--config-file',
    configPath,
    'run',
    `${base}/openapi.json`,
    '--checks',
    'all',
    '--phases',
    settings.phases,
    '--seed',
    String(settings.seed),
    '--max-examples',
    String(settings.maxExamples),
    ...(settings.maxTime === undefined ? [] : ['--max-time', String(settings.maxTime)]),
    '--workers',
    String(settings.workers),
    '--header',
    `Authorization: Bearer ${token}`,
    '--request-timeout',
    '30',
    '--generation-database',
    'none',
    '--continue-on-failure',
    '--report',
    'json,ndjson,junit',
    '--report-json-path',
    join(reportDir, 'report.json'),
    '--report-ndjson-path',
    join(reportDir, 'events.ndjson'),
    '--report-junit-path',
    join(reportDir, 'junit.xml'),
    '--no-color',
  ];
  say(`schemathesis run as ${label}: ${args.filter((a) => !a.startsWith('Authorization')).join(' ')}`);
  const started = Date.now();
  const child = spawn(schemathesisBin, args, {
    cwd: outDir,
    // No __pycache__ beside hooks.py in the work tree.
    env: {
      ...process.env,
      FUZZ_TIME_ZONES_FILE: join(outDir, 'time-zones.json'),
      PYTHONDONTWRITEBYTECODE: '1',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  current = child;
  let timedOut = false;
  const timeoutSeconds = (settings.maxTime ?? 0) + settings.runTimeout;
  const watchdog = setTimeout(() => {
    timedOut = true;
    say(`${label}: still running after ${timeoutSeconds} s; stopping it`);
    child.kill('SIGTERM');
  }, timeoutSeconds * 1000);
  const exitCode = await new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  clearTimeout(watchdog);
  current = undefined;
  return { label, exitCode, durationMs: Date.now() - started, reportDir, timedOut };
}

// --- main --------------------------------------------------------------------------------------

async function main(): Promise<number> {
  await mkdir(outDir, { recursive: true });
  await ensureSchemathesis();

  let local: LocalServices | undefined;
  const procs: Proc[] = [];
  let stopping: Promise<void> | undefined;
  const cleanup = () =>
    (stopping ??= (async () => {
      current?.kill('SIGTERM');
      await Promise.all(procs.map((p) => stopProc(p)));
      await local?.stop();
    })());
  const onSignal = () => {
    say('interrupted; stopping everything');
    void cleanup().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    local = await startLocalServices(
      { redisUrl: process.env.REDIS_URL, mongodbUri: process.env.MONGODB_URI },
      (l) => say(l),
    );
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const adminKey = `adm_${randomBytes(24).toString('base64url')}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      REDIS_URL: local.redisUrl,
      MONGODB_URI: freshDatabase(local.mongodbUri),
      ADMIN_API_KEY: adminKey,
      SESSION_SECRET: randomBytes(32).toString('base64url'),
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      VOICE_PROVIDER: 'simulator',
      SIM_CALL_MS: '200',
      LOG_LEVEL: settings.logLevel,
      // The fuzzer is one client sending thousands of requests a minute.
      RATE_LIMIT_PER_MINUTE: '1000000',
      QUEUE_PREFIX: `fuzz${randomBytes(3).toString('hex')}`,
    };
    // Nothing leaves the machine: no LLM, no mail server.
    for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'SMTP_URL', 'RETELL_API_KEY']) delete env[name];

    const release = startProc('core/platform/db/release.ts', env, 'release');
    procs.push(release);
    const releaseCode = await new Promise<number>((r) => release.child.once('exit', (c) => r(c ?? 1)));
    if (releaseCode !== 0)
      throw new Error(`release exited with code ${releaseCode}; see ${release.log.path}`);
    const crashed: string[] = [];
    for (const [entry, name] of [
      ['api/server.ts', 'web'],
      ['workers/main.ts', 'worker'],
    ] as const) {
      const p = startProc(entry, env, name);
      p.child.once('exit', (code, signal) => {
        if (stopping === undefined) {
          crashed.push(`${name} exited (${code ?? signal}) during the run; see ${p.log.path}`);
          say(crashed.at(-1)!);
        }
      });
      procs.push(p);
    }
    await waitForReady(`${base}/readyz`, procs[1]!, 60_000);
    say(`stack ready at ${base} (logs in ${outDir})`);

    const fixtures = await makeFixtures(base, adminKey);
    const configPath = join(outDir, 'schemathesis.toml');
    await writeFile(configPath, configToml(fixtures));
    // What the service accepts as an iana-time-zone: the names its runtime knows.
    await writeFile(
      join(outDir, 'time-zones.json'),
      JSON.stringify(['UTC', ...Intl.supportedValuesOf('timeZone')]),
    );

    // The firm key first: the platform run may revoke API keys and delete agents it finds.
    const runs: RunSummary[] = [];
    for (const [label, token] of [
      ['firm-key', fixtures.firmKey],
      ['platform-key', adminKey],
    ] as const) {
      const before = await answeredByStatus(base);
      const result = await schemathesis(label, base, token, configPath);
      runs.push(await readRun(result, diffCounts(await answeredByStatus(base), before)));
    }
    return printSummary(runs, crashed, await serverLogIndex(), base) ? 0 : 1;
  } finally {
    await cleanup();
  }
}

// --- the summary -------------------------------------------------------------------------------

interface Recorded {
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

interface ServerError {
  status: number;
  method: string;
  path: string;
  interaction: Recorded;
}

interface RunSummary {
  label: string;
  seconds: number;
  testCases: number;
  requestsSent: number;
  requestsAnswered: Record<string, number>;
  failuresByCheck: Record<string, number>;
  failureExamples: Map<string, string>;
  serverErrors: ServerError[];
  errors: string[];
  complete: boolean;
}

const decode = (b: { $base64?: string } | null | undefined): string =>
  b?.$base64 === undefined ? '' : Buffer.from(b.$base64, 'base64').toString('utf8');

/** Reads Schemathesis's JSON report and NDJSON event stream of one run. */
async function readRun(r: RunResult, answered: Record<string, number>): Promise<RunSummary> {
  const summary: RunSummary = {
    label: r.label,
    seconds: r.durationMs / 1000,
    testCases: 0,
    requestsSent: 0,
    requestsAnswered: answered,
    failuresByCheck: {},
    failureExamples: new Map(),
    serverErrors: [],
    errors: [],
    complete: false,
  };
  if (r.timedOut) summary.errors.push(`stopped after FUZZ_RUN_TIMEOUT (${settings.runTimeout} s)`);
  const report = await readFile(join(r.reportDir, 'report.json'), 'utf8').catch(() => null);
  if (report === null) {
    summary.errors.push(`no report (schemathesis exited ${r.exitCode})`);
    return summary;
  }
  const json = JSON.parse(report) as {
    complete?: boolean;
    test_cases?: { generated?: number };
    errors?: unknown[];
  };
  summary.complete = json.complete === true;
  summary.testCases = json.test_cases?.generated ?? 0;
  for (const e of json.errors ?? []) summary.errors.push(JSON.stringify(e).slice(0, 500));

  const events = createInterface({ input: createReadStream(join(r.reportDir, 'events.ndjson')) });
  for await (const line of events) {
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
      summary.serverErrors.push({ status, method: interaction.request.method, path, interaction });
    }
    for (const [caseId, checks] of Object.entries(recorder.checks ?? {})) {
      for (const check of checks) {
        if (check.status !== 'failure') continue;
        summary.failuresByCheck[check.name] = (summary.failuresByCheck[check.name] ?? 0) + 1;
        const failure = check.failure_info?.failure;
        const answer = describeResponse(recorder.interactions?.[caseId]);
        const key = `${check.name} ${recorder.label} -> ${answer}`;
        if (!summary.failureExamples.has(key)) {
          const detail = (failure?.message ?? '').split('\n')[0] || failure?.title || '';
          summary.failureExamples.set(key, `${failure?.code ?? ''} ${detail}`.trim());
        }
      }
    }
  }
  return summary;
}

/** "400 unknown_voice": the status and the error code of a recorded response. */
function describeResponse(i: Recorded | undefined): string {
  if (i?.response == null) return 'no response';
  let code = '';
  try {
    code = (JSON.parse(decode(i.response.content)) as { error?: { code?: string } }).error?.code ?? '';
  } catch {
    // not JSON
  }
  return `${i.response.status_code}${code === '' ? '' : ` ${code}`}`;
}

const size = (i: Recorded): number => i.request.uri.length + decode(i.request.body).length;

/** A curl line that repeats the request (the token as $TOKEN, the base URL as $BASE). */
function curl(i: Recorded, base: string): string {
  const url = i.request.uri.startsWith(base) ? `$BASE${i.request.uri.slice(base.length)}` : i.request.uri;
  const parts = [`curl -X ${i.request.method}`, `-H "Authorization: Bearer $TOKEN"`];
  const type = i.request.headers?.['Content-Type']?.[0];
  if (type !== undefined) parts.push(`-H 'Content-Type: ${type}'`);
  const body = decode(i.request.body);
  if (body !== '') {
    const shown = body.length > 300 ? `${body.slice(0, 300)}...` : body;
    parts.push(
      `--data-binary '${shown.replace(/'/g, "'\\''")}'${body.length > 300 ? ` (${body.length} bytes)` : ''}`,
    );
  }
  parts.push(`"${url}"`);
  return parts.join(' ');
}

/** The web's own count of the requests it answered, by status (its /metrics). */
async function answeredByStatus(base: string): Promise<Record<string, number>> {
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

function diffCounts(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

/** What the web logged for a request id that failed with a 5xx (pino JSON lines). */
async function serverLogIndex(): Promise<Map<string, string>> {
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

interface ServerErrorGroup {
  status: number;
  method: string;
  cause: string;
  paths: Set<string>;
  count: number;
  /** The shortest request of the group: the minimal reproduction. */
  example: Recorded;
}

/** 5xx responses grouped by status, method and what the web logged, so one defect is one entry. */
function groupServerErrors(errors: ServerError[], logIndex: Map<string, string>): ServerErrorGroup[] {
  const groups = new Map<string, ServerErrorGroup>();
  for (const e of errors) {
    const id = e.interaction.response?.headers?.['x-request-id']?.[0];
    const cause = (id === undefined ? undefined : logIndex.get(id)) ?? 'nothing logged';
    const key = `${e.status} ${e.method} ${cause}`;
    const group = groups.get(key);
    if (group === undefined) {
      groups.set(key, {
        status: e.status,
        method: e.method,
        cause,
        paths: new Set([e.path]),
        count: 1,
        example: e.interaction,
      });
    } else {
      group.count += 1;
      group.paths.add(e.path);
      if (size(e.interaction) < size(group.example)) group.example = e.interaction;
    }
  }
  return [...groups.values()].sort((a, b) => b.count - a.count);
}

function printSummary(
  runs: RunSummary[],
  crashed: string[],
  logIndex: Map<string, string>,
  base: string,
): boolean {
  const out: string[] = ['', '================ fuzz summary ================'];
  const list = (items: string[], max: number) =>
    items.length <= max
      ? items.join(', ')
      : `${items.slice(0, max).join(', ')} and ${items.length - max} more`;
  let failed = crashed.length > 0;
  for (const r of runs) {
    const answered = Object.values(r.requestsAnswered).reduce((a, b) => a + b, 0);
    const byClass: Record<string, number> = {};
    for (const [status, n] of Object.entries(r.requestsAnswered)) {
      byClass[`${status[0]}xx`] = (byClass[`${status[0]}xx`] ?? 0) + n;
    }
    const classes = Object.entries(byClass)
      .sort()
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
    out.push(
      '',
      `${r.label}: ${r.testCases} test cases, ${r.requestsSent} requests recorded by Schemathesis, ` +
        `${answered} answered by the web (${classes}), ${r.seconds.toFixed(0)} s`,
    );
    const checks = Object.entries(r.failuresByCheck).sort((a, b) => b[1] - a[1]);
    if (checks.length === 0) out.push('  failures: none');
    for (const [name, n] of checks) {
      const gated = GATE.has(name);
      if (gated) failed = true;
      const examples = [...r.failureExamples].filter(([key]) => key.startsWith(`${name} `));
      const operations = new Set(examples.map(([key]) => key.slice(name.length + 1).split(' -> ')[0]));
      out.push(
        `  ${gated ? 'FAIL' : 'note'} ${name}: ${n} failed test cases in ${operations.size} operations`,
      );
      for (const [key, detail] of examples.slice(0, 8)) {
        out.push(`         ${key.slice(name.length + 1)}: ${detail.slice(0, 140)}`);
      }
      if (examples.length > 8) out.push(`         ... and ${examples.length - 8} more`);
    }
    const groups = groupServerErrors(r.serverErrors, logIndex);
    if (groups.length > 0) {
      failed = true;
      out.push(`  5xx responses: ${r.serverErrors.length}, in ${groups.length} groups`);
      for (const g of groups) {
        out.push(`    ${g.status} ${g.method} (${g.count}x) server: ${g.cause}`);
        out.push(`      paths: ${list([...g.paths].sort(), 6)}`);
        out.push(`      ${curl(g.example, base)}`);
      }
    }
    for (const e of r.errors) {
      failed = true;
      out.push(`  ERROR ${e}`);
    }
    if (!r.complete) {
      failed = true;
      out.push('  ERROR the run did not complete');
    }
  }
  for (const c of crashed) out.push(`CRASH ${c}`);
  out.push(
    '',
    `gate: ${[...GATE].join(', ')}, any 5xx, any error or crash`,
    `result: ${failed ? 'FAILED' : 'passed'}  (reports and logs in ${outDir})`,
    '',
  );
  process.stdout.write(out.join('\n'));
  return !failed;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    say(`failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
