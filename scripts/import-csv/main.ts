// npm run import-csv -- --firm <slug> --file contacts.csv [--url URL] [--token TOKEN]
//                        [--default-country GB] [--delimiter ";"] [--json]
//
// Imports a CSV file of contacts through POST /api/contacts/import, in batches of 5,000 rows,
// streaming: the file is read twice (once to count and check it, once to send), never whole,
// so a file of any length takes the same memory. Header names map to contact fields whatever
// their case and spacing ("First Name" → first_name); other columns are kept under custom.
// Prints the summed result and every error row the service listed, by CSV line.
import { parseArgs } from 'node:util';
import { SingleBar, Presets } from 'cli-progress';
import { MAX_IMPORT_ROWS } from '../../core/domain/contacts/import-request.js';
import { mapColumns, rowOf, type ColumnMap } from './columns.js';
import { countRows, csvRecords } from './csv-records.js';
import { ImportError, importBatch, type ImportTarget } from './import-client.js';

const USAGE = `Usage: npm run import-csv -- --firm <slug> --file <contacts.csv> [options]

  --firm <slug>             the firm to import into (required)
  --file <path>             the CSV file, with a header line (required)
  --url <url>               the service (default: PUBLIC_BASE_URL, else http://127.0.0.1:$PORT, else :3000)
  --token <token>           the firm's API key (default: INTAKE_API_TOKEN; required, never the platform key)
  --default-country <CC>    ISO country of phone numbers written without a country code (default US)
  --delimiter <char>        cell delimiter (default ",")
  --batch-size <n>          rows per request, at most ${MAX_IMPORT_ROWS} (default ${MAX_IMPORT_ROWS})
  --json                    print the result as JSON
`;

class UsageError extends Error {}

interface Options {
  target: ImportTarget;
  file: string;
  delimiter: string;
  batchSize: number;
  json: boolean;
}

function readOptions(argv: string[], env: NodeJS.ProcessEnv): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      firm: { type: 'string' },
      file: { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      'default-country': { type: 'string' },
      delimiter: { type: 'string' },
      'batch-size': { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) throw new UsageError('');
  if (!values.firm) throw new UsageError('--firm is required');
  if (!values.file) throw new UsageError('--file is required');
  const url = values.url ?? env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${env.PORT ?? '3000'}`;
  try {
    new URL(url);
  } catch {
    throw new UsageError(`--url is not a URL: ${url}`);
  }
  // A firm's own key: an import acts for one firm, and the platform key would let a typo in
  // --firm write into another firm's contacts.
  const token = values.token ?? env.INTAKE_API_TOKEN;
  if (!token) {
    throw new UsageError(
      "no firm token: set INTAKE_API_TOKEN to the firm's API key (POST /api/auth/api-keys), or pass --token",
    );
  }
  if (env.ADMIN_API_KEY && token === env.ADMIN_API_KEY) {
    throw new UsageError("the token is the platform key (ADMIN_API_KEY): imports take the firm's API key");
  }
  const country = values['default-country'];
  if (country !== undefined && !/^[A-Za-z]{2}$/.test(country)) {
    throw new UsageError('--default-country takes a two-letter ISO country code, e.g. GB');
  }
  const batchSize = Number(values['batch-size'] ?? MAX_IMPORT_ROWS);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_IMPORT_ROWS) {
    throw new UsageError(`--batch-size must be an integer from 1 to ${MAX_IMPORT_ROWS}`);
  }
  const delimiter = values.delimiter ?? ',';
  if (delimiter.length !== 1) throw new UsageError('--delimiter takes one character');
  return {
    target: {
      baseUrl: url.replace(/\/+$/, ''),
      token,
      firm: values.firm,
      defaultCountry: country?.toUpperCase(),
    },
    file: values.file,
    delimiter,
    batchSize,
    json: values.json ?? false,
  };
}

interface Totals {
  /** Rows of the batches the service has answered for (a failed batch's rows are not counted). */
  rows: number;
  imported: number;
  duplicates: number;
  errors: number;
  /** Error rows the service listed (it lists the first 100 of each request), by CSV line. */
  error_rows: Array<{ line: number; reason: string }>;
  /** Error rows counted but not listed by the service. */
  unlisted_errors: number;
}

async function run(options: Options, totals: Totals): Promise<void> {
  const total = await countRows(options.file, options.delimiter);
  const bar = new SingleBar(
    {
      format:
        ' {bar} {percentage}% | {value}/{total} rows sent | imported {imported} | duplicates {duplicates} | errors {errors}',
      stream: process.stderr,
      hideCursor: true,
    },
    Presets.shades_classic,
  );
  bar.start(total, 0, { imported: 0, duplicates: 0, errors: 0 });
  let columns: ColumnMap | undefined;
  let rows: unknown[] = [];
  let lines: number[] = [];
  let sent = 0;
  const send = async () => {
    if (rows.length === 0) return;
    sent += rows.length;
    bar.update(sent);
    const result = await importBatch(options.target, rows).catch((err: unknown) => {
      if (err instanceof ImportError) err.lines = [lines[0] ?? -1, lines.at(-1) ?? -1];
      throw err;
    });
    totals.rows += rows.length;
    totals.imported += result.imported;
    totals.duplicates += result.duplicates;
    totals.errors += result.errors;
    for (const { index, reason } of result.error_rows)
      totals.error_rows.push({ line: lines[index] ?? -1, reason });
    totals.unlisted_errors += result.errors - result.error_rows.length;
    bar.update(sent, {
      imported: totals.imported,
      duplicates: totals.duplicates,
      errors: totals.errors,
    });
    rows = [];
    lines = [];
  };
  try {
    for await (const record of csvRecords(options.file, options.delimiter)) {
      if (columns === undefined) {
        columns = mapColumns(record.cells);
        for (const s of columns.shadowed) {
          process.stderr.write(
            `note: column "${s.header}" is kept under custom ("${s.by}" gives ${s.field})\n`,
          );
        }
        continue;
      }
      rows.push(rowOf(columns, record.cells));
      lines.push(record.line);
      if (rows.length >= options.batchSize) await send();
    }
    await send();
  } finally {
    bar.stop();
  }
}

const number = (n: number) => n.toLocaleString('en-US');

function report(options: Options, totals: Totals): string {
  const out = [
    `Imported ${options.file} into firm ${options.target.firm}:`,
    `  rows        ${number(totals.rows)}`,
    `  imported    ${number(totals.imported)}`,
    `  duplicates  ${number(totals.duplicates)}`,
    `  errors      ${number(totals.errors)}`,
  ];
  if (totals.error_rows.length > 0) {
    out.push('Error rows:');
    for (const { line, reason } of totals.error_rows) out.push(`  line ${line}: ${reason}`);
  }
  if (totals.unlisted_errors > 0) {
    out.push(
      `  … and ${number(totals.unlisted_errors)} more error rows not listed (the service lists the first 100 of each batch of ${number(options.batchSize)} rows)`,
    );
  }
  return `${out.join('\n')}\n`;
}

async function main(): Promise<number> {
  let options: Options;
  try {
    options = readOptions(process.argv.slice(2), process.env);
  } catch (err) {
    const message = (err as Error).message;
    process.stderr.write(`${message ? `${message}\n\n` : ''}${USAGE}`);
    return err instanceof UsageError && message === '' ? 0 : 2;
  }
  const totals: Totals = {
    rows: 0,
    imported: 0,
    duplicates: 0,
    errors: 0,
    error_rows: [],
    unlisted_errors: 0,
  };
  try {
    await run(options, totals);
    process.stdout.write(options.json ? `${JSON.stringify(totals)}\n` : report(options, totals));
    return 0;
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    const message =
      code === 'ENOENT' || code === 'EACCES' || code === 'EISDIR'
        ? `cannot read ${options.file} (${code})`
        : err instanceof ImportError || code.startsWith('CSV_')
          ? (err as Error).message
          : ((err as Error).stack ?? String(err));
    process.stderr.write(`import-csv: ${message}\n`);
    if (err instanceof ImportError && err.lines !== undefined) {
      const [first, last] = err.lines;
      process.stderr.write(`The batch of lines ${first} to ${last} was not imported.\n`);
    }
    if (totals.rows > 0) {
      // What went through stays imported; sending the file again counts those rows as duplicates.
      process.stderr.write(`Stopped; the batches before it were imported:\n`);
      process.stderr.write(report(options, totals));
    }
    return 1;
  }
}

process.exitCode = await main();
