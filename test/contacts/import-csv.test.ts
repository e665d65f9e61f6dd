// `npm run import-csv` as a child process against the real stack: a generated 2,000-row file
// (headers in any case and spacing, an unknown column, quoted cells spanning lines, a blank
// line, error rows and duplicates) is streamed in batches of 500 (--batch-size; the default is
// the service's largest request, 5,000 rows, which batches the same way, only with more rows
// to wait for); the printed summary is the sum, and each error row is reported with its line
// in the file.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createFirm, startStack, type Stack } from '../helpers/stack.js';
import { contactsOf, importRows, importsOf } from './support.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
let stack: Stack;
let dir: string;

beforeAll(async () => {
  stack = await startStack({ workers: true });
  dir = await mkdtemp(join(tmpdir(), 'import-csv-'));
});
afterAll(async () => {
  await stack?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs `npm run import-csv -- ...args` with `env` added; resolves with its exit code and output. */
function importCsv(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'import-csv', '--', ...args], {
      cwd: root,
      // Nothing of the test's own environment decides the defaults under test.
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const pad = (n: number) => String(n).padStart(4, '0');
const phoneOf = (i: number) => `+1 ${i < 10_000 ? '212' : '310'} 555-${pad(i % 10_000)}`;
/** Rows of the generated file, and rows per request: four requests. */
const ROWS = 2000;
const BATCH = 500;
const csvCell = (text: string) => (/[",\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

interface Generated {
  path: string;
  errorLines: number[];
  duplicates: number;
}

/** ROWS rows: every 100th an invalid phone (error), every 100th a repeat of the row before. */
async function generate(name: string, alreadyStoredRow: number): Promise<Generated> {
  const path = join(dir, name);
  const out = createWriteStream(path);
  const write = (text: string) =>
    out.write(text) ? Promise.resolve() : new Promise<void>((r) => out.once('drain', () => r()));
  await write('First Name, last_name ,PHONE NUMBER,E-Mail,Company,Case Type,tags\n');
  let line = 2;
  const errorLines: number[] = [];
  let duplicates = 0;
  for (let i = 0; i < ROWS; i++) {
    let phone = phoneOf(i);
    let company = `Company ${i}`;
    if (i % 100 === 50) {
      phone = '12345';
      errorLines.push(line);
    }
    if (i % 100 === 70 || i === alreadyStoredRow) {
      if (i % 100 === 70) phone = phoneOf(i - 1);
      duplicates += 1;
    }
    // A quoted company name over two lines now and then: the lines after it shift.
    if (i % 400 === 3) company = `Acme, "Legal"\nDivision ${i}`;
    const email = i % 100 === 70 ? `Repeat${i}@Example.com` : ` Person${i}@Example.com`;
    await write(
      [`First${i}`, `Last${i}`, phone, email, company, i % 2 ? 'injury' : 'family', 'csv;2024']
        .map(csvCell)
        .join(',') + '\n',
    );
    line += 1 + (company.match(/\n/g)?.length ?? 0);
    if (i === 1234) {
      await write('\n');
      line += 1;
    }
  }
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
  return { path, errorLines, duplicates };
}

// Each case has its own firm and file and waits mostly on its own child process: side by side.
describe.concurrent('npm run import-csv', () => {
  it('imports a file in batches of --batch-size rows, sums the result and reports error rows by CSV line', async ({
    expect,
  }) => {
    const firm = await createFirm(stack);
    // Row 10's phone is the firm's already.
    await importRows(firm.client, firm.slug, [{ phone: phoneOf(10), first_name: 'Existing' }]);
    const file = await generate('contacts.csv', 10);
    // URL and token from the environment, as documented.
    const run = await importCsv(['--firm', firm.slug, '--file', file.path, '--batch-size', String(BATCH)], {
      PUBLIC_BASE_URL: stack.baseUrl,
      INTAKE_API_TOKEN: firm.key,
    });
    expect(run.code, run.stderr).toBe(0);
    const errors = file.errorLines.length;
    const imported = ROWS - errors - file.duplicates;
    expect(run.stdout).toContain(`Imported ${file.path} into firm ${firm.slug}:`);
    expect(run.stdout).toMatch(new RegExp(`rows +${ROWS.toLocaleString('en-US')}\\n`));
    expect(run.stdout).toMatch(new RegExp(`imported +${imported.toLocaleString('en-US')}\\n`));
    expect(run.stdout).toMatch(new RegExp(`duplicates +${file.duplicates}\\n`));
    expect(run.stdout).toMatch(new RegExp(`errors +${errors}\\n`));
    const reported = [...run.stdout.matchAll(/^ {2}line (\d+): (.*)$/gm)].map((m) => [Number(m[1]), m[2]!]);
    expect(reported.map(([l]) => l)).toEqual(file.errorLines);
    for (const [, reason] of reported) expect(reason).toMatch(/"phone" "12345" is not a valid phone number/);

    // One request per batch, in the file's order.
    const requests = await importsOf(stack)
      .find({ firm: firm.slug }, { sort: { created_at: 1 } })
      .toArray();
    expect(requests.map((r) => r.rows)).toEqual([1, ...Array<number>(ROWS / BATCH).fill(BATCH)]);

    const contacts = contactsOf(stack);
    expect(await contacts.countDocuments({ firm: firm.slug })).toBe(imported + 1);
    const sample = await contacts.findOne({ firm: firm.slug, first_name: 'First403' });
    expect(sample).toMatchObject({
      last_name: 'Last403',
      phone: '+12125550403',
      email: 'person403@example.com',
      company: 'Acme, "Legal"\nDivision 403',
      tags: ['csv', '2024'],
      custom: [{ key: 'Case Type', value: 'injury' }],
    });
  }, 240_000);

  it('prints JSON with --json, and takes the URL and token from flags', async ({ expect }) => {
    const firm = await createFirm(stack);
    const path = join(dir, 'small.csv');
    await writeFile(
      path,
      'Name;Mobile;Email\nAnn Lee;020 7946 0018;\nBob;;bob@example.com\nNobody;;\n',
      'utf8',
    );
    const run = await importCsv([
      '--firm',
      firm.slug,
      '--file',
      path,
      '--url',
      stack.baseUrl,
      '--token',
      firm.key,
      '--default-country',
      'gb',
      '--delimiter',
      ';',
      '--json',
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      rows: 3,
      imported: 2,
      duplicates: 0,
      errors: 1,
      error_rows: [{ line: 4, reason: expect.stringMatching(/neither a phone nor an email/) }],
      unlisted_errors: 0,
    });
    expect(await contactsOf(stack).findOne({ firm: firm.slug, name: 'Ann Lee' })).toMatchObject({
      phone: '+442079460018',
    });
  });

  it('stops before sending anything when the file is malformed, naming the line', async ({ expect }) => {
    const firm = await createFirm(stack);
    const path = join(dir, 'broken.csv');
    await writeFile(path, 'name,phone\nAnn,+12125550100\n"Bob,+12125550101\n', 'utf8');
    const run = await importCsv([
      '--firm',
      firm.slug,
      '--file',
      path,
      '--url',
      stack.baseUrl,
      '--token',
      firm.key,
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/import-csv: .*quote.*line/i);
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug })).toBe(0);
  });

  it('fails with the service’s error for a firm the token may not use, and with usage for bad flags', async ({
    expect,
  }) => {
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const path = join(dir, 'one.csv');
    await writeFile(path, 'phone\n+12125550100\n', 'utf8');
    const forbidden = await importCsv(['--firm', other.slug, '--file', path, '--url', stack.baseUrl], {
      INTAKE_API_TOKEN: firm.key,
    });
    expect(forbidden.code).toBe(1);
    expect(forbidden.stderr).toMatch(/403 \(forbidden: /);
    const usage = await importCsv(['--file', path]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--firm is required/);
    const missing = await importCsv(['--firm', firm.slug, '--file', join(dir, 'nope.csv'), '--token', 'x']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/cannot read .*nope\.csv/);
  });

  it('requires a firm token: without INTAKE_API_TOKEN it stops and says so, never using the platform key', async ({
    expect,
  }) => {
    const firm = await createFirm(stack);
    const path = join(dir, 'platform.csv');
    await writeFile(path, 'phone\n+12125550170\n', 'utf8');
    const args = ['--firm', firm.slug, '--file', path, '--url', stack.baseUrl];
    const unset = await importCsv(args, { ADMIN_API_KEY: stack.config.adminApiKey });
    expect(unset.code).toBe(2);
    expect(unset.stderr).toMatch(/no firm token: set INTAKE_API_TOKEN/);
    const platform = await importCsv([...args, '--token', stack.config.adminApiKey], {
      ADMIN_API_KEY: stack.config.adminApiKey,
    });
    expect(platform.code).toBe(2);
    expect(platform.stderr).toMatch(/platform key/);
    expect(await contactsOf(stack).countDocuments({ firm: firm.slug })).toBe(0);
  });

  it('a "__proto__" column (and "constructor", "prototype") is an ordinary column: the rows import', async ({
    expect,
  }) => {
    const firm = await createFirm(stack);
    const path = join(dir, 'proto.csv');
    await writeFile(
      path,
      'Name,Phone,__proto__,constructor,prototype\nAnn,+12125550171,a,b,c\nBob,+12125550172,,,\n',
      'utf8',
    );
    const run = await importCsv(['--firm', firm.slug, '--file', path, '--url', stack.baseUrl, '--json'], {
      INTAKE_API_TOKEN: firm.key,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ rows: 2, imported: 2, duplicates: 0, errors: 0 });
    expect(await contactsOf(stack).findOne({ firm: firm.slug, name: 'Ann' })).toMatchObject({
      custom: [
        { key: '__proto__', value: 'a' },
        { key: 'constructor', value: 'b' },
        { key: 'prototype', value: 'c' },
      ],
    });
  });

  it('a failed request is reported as not imported, never as "imported 0"', async ({ expect }) => {
    const firm = await createFirm(stack);
    const other = await createFirm(stack);
    const path = join(dir, 'failed.csv');
    await writeFile(path, 'phone\n+12125550173\n+12125550174\n', 'utf8');
    const run = await importCsv(['--firm', other.slug, '--file', path, '--url', stack.baseUrl], {
      INTAKE_API_TOKEN: firm.key,
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/403 \(forbidden: /);
    expect(run.stderr).toMatch(/lines 2 to 3 was not imported/);
    expect(`${run.stdout}${run.stderr}`).not.toMatch(/imported\s+0\b/);
  });
});
