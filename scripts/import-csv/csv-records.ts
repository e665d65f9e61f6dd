import { createReadStream } from 'node:fs';
import { parse, type Parser } from 'csv-parse';

// The CSV file as a stream of records with the line each starts on: never read whole, so a
// file of any length takes the same memory.

export interface CsvRecord {
  cells: string[];
  /** 1-based line of the file where the record begins (the header is line 1). */
  line: number;
}

function parser(file: string, delimiter: string): Parser {
  const csv = parse({
    bom: true,
    delimiter,
    info: true,
    skip_empty_lines: true,
    // A short or long record is the service's to judge (a missing phone is an error row).
    relax_column_count: true,
  });
  const source = createReadStream(file);
  // pipe() does not pass a read error on (a missing file): the parser ends with it.
  source.on('error', (err) => csv.destroy(err));
  return source.pipe(csv);
}

/** The records of the file, header first. A malformed file (an unclosed quote, ...) throws with its line. */
export async function* csvRecords(file: string, delimiter: string): AsyncGenerator<CsvRecord> {
  for await (const item of parser(file, delimiter)) {
    const { record, info } = item as { record: string[]; info: { lines: number } };
    // info.lines is the line the record ends on; quoted cells may span lines.
    const inside = record.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0);
    yield { cells: record, line: info.lines - inside };
  }
}

/** Records after the header, counted in one streaming pass (which also finds a malformed file first). */
export async function countRows(file: string, delimiter: string): Promise<number> {
  let records = 0;
  for await (const _ of parser(file, delimiter)) records += 1;
  return Math.max(0, records - 1);
}
