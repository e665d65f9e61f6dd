// The verdict of `npm run fuzz`: what each run found, which of it fails the gate, and a curl
// line for the smallest request of each group of 5xx responses.
import { decode, type Recorded, type RunSummary, type ServerError } from './report.js';
import { outDir } from './settings.js';

/**
 * The checks whose failures fail the run: a 5xx, and a response the document does not
 * describe (its status, content type, headers or body). The other checks (negative data
 * accepted, valid data rejected, auth, use after free, ...) are reported, not gated, and so is a
 * documented 502 of an outside system (report.ts OUTSIDE_SYSTEM_CODES).
 */
const GATE = new Set([
  'not_a_server_error',
  'status_code_conformance',
  'content_type_conformance',
  'response_headers_conformance',
  'response_schema_conformance',
]);

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

/**
 * Exit codes of `npm run fuzz`: 1 for a finding about the service, 3 when the tool itself
 * crashed on both attempts (and found nothing about the service), 2 for a bad knob.
 */
export const EXIT = { passed: 0, failed: 1, toolCrash: 3 } as const;

/**
 * Prints the summary and its `result:` line (`passed`, `FAILED` or `tool-crash`, which .ci/run
 * shows) and returns the exit code. A finding about the service outranks a crash of the tool.
 */
export function printSummary(
  runs: RunSummary[],
  crashed: string[],
  logIndex: Map<string, string>,
  base: string,
): number {
  const out: string[] = ['', '================ fuzz summary ================'];
  const list = (items: string[], max: number) =>
    items.length <= max
      ? items.join(', ')
      : `${items.slice(0, max).join(', ')} and ${items.length - max} more`;
  let failed = crashed.length > 0;
  const toolCrashed: string[] = [];
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
        `${answered} answered by the web (${classes}), ${r.seconds.toFixed(0)} s` +
        (r.attempt > 1 ? ' (the retry: the first attempt crashed)' : ''),
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
    const outside = groupServerErrors(r.outsideSystemErrors, logIndex);
    if (outside.length > 0) {
      // Not gated: the service answered for a provider this machine cannot reach (report.ts).
      out.push(
        `  note 502 from outside systems: ${r.outsideSystemErrors.length}, in ${outside.length} groups`,
      );
      for (const g of outside) {
        out.push(`    ${g.status} ${g.method} (${g.count}x) server: ${g.cause}`);
        out.push(`      ${curl(g.example, base)}`);
      }
    }
    for (const e of r.errors) {
      failed = true;
      out.push(`  ERROR ${e}`);
    }
    for (const c of r.toolCrashes) {
      toolCrashed.push(r.label);
      out.push(`  TOOL CRASH (attempt ${r.attempt}) ${c}`);
    }
  }
  for (const c of crashed) out.push(`CRASH ${c}`);
  out.push('', `gate: ${[...GATE].join(', ')}, any 5xx, any error or crash of the service`);
  if (failed) {
    out.push(`result: FAILED  (reports and logs in ${outDir})`);
  } else if (toolCrashed.length > 0) {
    const labels = [...new Set(toolCrashed)].join(', ');
    out.push(
      `the fuzzer itself (Schemathesis/Hypothesis) crashed on ${labels}, on the first attempt and on its retry ` +
        'with the same seed: this is not a finding about the service',
      `result: tool-crash  (exit ${EXIT.toolCrash}; reports and logs in ${outDir})`,
    );
  } else {
    out.push(`result: passed  (reports and logs in ${outDir})`);
  }
  out.push('');
  process.stdout.write(out.join('\n'));
  return failed ? EXIT.failed : toolCrashed.length > 0 ? EXIT.toolCrash : EXIT.passed;
}
