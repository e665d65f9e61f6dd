// The fuzz gate (scripts/fuzz/report.ts, summary.ts) over a run's own report files: any 5xx of the
// service fails it, but a documented 502 naming an outside system (Cal.com, OpenAI, Clio,
// RingCentral), which this machine cannot reach, is reported and does not. The fuzzer found one:
// it gave the firm a Cal.com booking setting with a made-up key and Cal.com's own base URL.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { OUTSIDE_SYSTEM_CHECK, readRun } from '../../scripts/fuzz/report.js';
import { EXIT, printSummary } from '../../scripts/fuzz/summary.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fuzz-verdict-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

const b64 = (value: unknown) => ({ $base64: Buffer.from(JSON.stringify(value)).toString('base64') });

/** One scenario of one operation answered `status` with the error `code`. */
function scenario(label: string, status: number, code: string): string {
  const [method, path] = label.split(' ');
  return JSON.stringify({
    ScenarioFinished: {
      recorder: {
        label,
        checks: {
          c1: [
            {
              name: 'not_a_server_error',
              status: 'failure',
              failure_info: { failure: { code: 'ST101', title: 'Server error', message: 'Server error' } },
            },
          ],
        },
        interactions: {
          c1: {
            request: { method, uri: `http://127.0.0.1:1${path}` },
            response: { status_code: status, content: b64({ error: { code, message: 'm' } }) },
          },
        },
      },
    },
  });
}

async function verdictOf(name: string, lines: string[]) {
  const reportDir = join(dir, name);
  await rm(reportDir, { recursive: true, force: true });
  await mkdir(reportDir, { recursive: true });
  await writeFile(
    join(reportDir, 'report.json'),
    JSON.stringify({ complete: true, test_cases: { generated: 1 } }),
  );
  await writeFile(join(reportDir, 'events.ndjson'), `${lines.join('\n')}\n`);
  const run = await readRun(
    { label: name, reportDir, durationMs: 1000, attempt: 1, timedOut: false, exitCode: 1 } as never,
    {},
  );
  const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  try {
    return { run, exit: printSummary([run], [], new Map(), 'http://127.0.0.1:1') };
  } finally {
    write.mockRestore();
  }
}

describe('the fuzz gate', () => {
  it('a 502 of an outside system (booking_provider_error) is reported, not gated', async () => {
    const { run, exit } = await verdictOf('outside', [
      scenario('GET /api/appointments/availability', 502, 'booking_provider_error'),
    ]);
    expect(exit).toBe(EXIT.passed);
    expect(run.serverErrors).toEqual([]);
    expect(run.outsideSystemErrors).toHaveLength(1);
    expect(run.failuresByCheck).toEqual({ [OUTSIDE_SYSTEM_CHECK]: 1 });
  });

  it('a 500, or a 502 with any other code, fails the run', async () => {
    for (const [status, code] of [
      [500, 'internal_error'],
      [502, 'bad_gateway'],
      [503, 'unavailable'],
    ] as const) {
      const { run, exit } = await verdictOf(`ours-${status}`, [
        scenario('GET /api/appointments/availability', status, code),
      ]);
      expect(exit, `${status} ${code}`).toBe(EXIT.failed);
      expect(run.serverErrors).toHaveLength(1);
      expect(run.failuresByCheck).toEqual({ not_a_server_error: 1 });
    }
  });
});
