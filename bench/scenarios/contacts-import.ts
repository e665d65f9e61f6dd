// A 5,000-row contacts import against a raw driver baseline on the same database (folded in
// from bench/contacts-import.ts). The web and a worker (contacts queue) run as children, so the
// timing includes HTTP, the body, the job round trip and the worker; the request waits for the
// result (200), as it does under 25 s.
//   import:   POST /api/contacts/import with 5,000 new rows (phone and email each), timed to its
//             200: parse and normalise every row, claim 10,000 keys, insert 5,000 contacts.
//   baseline: what a naive importer does with the driver: one `$in` lookup of the 5,000 phones and
//             one of the 5,000 emails in a scratch collection (indexed on both), then one
//             insertMany of the same 5,000 rows into it (no normalisation, no race safety).
// Then the same rows again (a re-import: all duplicates) against the two `$in` lookups alone.
// Rounds alternate which side goes first; each round has fresh rows; both collections grow alike.
import type { Collection } from 'mongodb';
import { say } from '../lib/measure.js';
import { ratioRow, type Row } from '../lib/report.js';
import type { Scenario } from '../lib/scenario.js';
import { api, createApp, rand } from '../lib/stack.js';

const ROWS = 5000;
const AREAS = ['212', '310', '415', '617', '202', '312', '404', '503', '602', '702', '713', '305'];

/** Batch `run` of distinct people: valid US numbers (area code by batch) and emails. */
function rows(run: number, side: 'import' | 'baseline') {
  const exchange = side === 'import' ? '555' : '556';
  return Array.from({ length: ROWS }, (_, i) => ({
    first_name: `First${i}`,
    last_name: `Run${run}`,
    phone: `+1 ${AREAS[run]} ${exchange} ${String(i).padStart(4, '0')}`,
    email: `person${i}.run${run}.${side}@example.com`,
    company: `Company ${i % 97}`,
  }));
}

type ScratchRow = ReturnType<typeof rows>[number];

async function timedBaseline(scratch: Collection<ScratchRow>, contacts: ScratchRow[], insert: boolean) {
  const started = performance.now();
  const phones = await scratch.find({ phone: { $in: contacts.map((c) => c.phone) } }).toArray();
  const emails = await scratch.find({ email: { $in: contacts.map((c) => c.email) } }).toArray();
  if (insert) await scratch.insertMany(contacts.map((c) => ({ ...c })));
  return { ms: performance.now() - started, found: phones.length + emails.length };
}

export const contactsImport: Scenario = {
  name: 'contacts-import',
  ids: ['import_vs_raw', 'import_duplicates_vs_raw'],
  async run(ctx) {
    // Each round and the warm-up take their own area code.
    const rounds = Math.min(ctx.rounds, AREAS.length - 1);
    const app = await createApp(ctx.stores, 'contacts-import');
    try {
      const web = await app.startWeb();
      await app.startWorker('worker', { WORKER_QUEUES: 'contacts' });
      const firm = `bench-${rand()}`;
      await api(web.base, 'POST', '/api/firms', app.adminKey, { slug: firm, name: 'Bench firm' });
      const scratch = app.db.collection<ScratchRow>(`bench_scratch_${rand()}`);
      await scratch.createIndexes([{ key: { phone: 1 } }, { key: { email: 1 } }]);
      const timedImport = async (contacts: unknown[]) => {
        const started = performance.now();
        const result = await api<{ imported: number; duplicates: number; errors: number }>(
          web.base,
          'POST',
          '/api/contacts/import',
          app.adminKey,
          { firmSlug: firm, contacts },
        );
        return { ms: performance.now() - started, result };
      };
      say('contacts-import: warm-up, one 5,000-row import and one baseline');
      await timedImport(rows(AREAS.length - 1, 'import'));
      await timedBaseline(scratch, rows(AREAS.length - 1, 'baseline'), true);

      const fresh = { import: [] as number[], baseline: [] as number[] };
      const again = { import: [] as number[], baseline: [] as number[] };
      for (let run = 0; run < rounds; run++) {
        const mine = rows(run, 'import');
        const theirs = rows(run, 'baseline');
        const sides = run % 2 === 0 ? (['import', 'baseline'] as const) : (['baseline', 'import'] as const);
        for (const side of sides) {
          if (side === 'import') {
            const { ms, result } = await timedImport(mine);
            if (result.imported !== ROWS) throw new Error(`import round ${run}: ${JSON.stringify(result)}`);
            fresh.import.push(ms);
          } else {
            fresh.baseline.push((await timedBaseline(scratch, theirs, true)).ms);
          }
        }
        for (const side of sides) {
          if (side === 'import') {
            const { ms, result } = await timedImport(mine);
            if (result.duplicates !== ROWS)
              throw new Error(`re-import round ${run}: ${JSON.stringify(result)}`);
            again.import.push(ms);
          } else {
            const { ms, found } = await timedBaseline(scratch, theirs, false);
            if (found !== 2 * ROWS) throw new Error(`baseline round ${run} again found ${found}`);
            again.baseline.push(ms);
          }
        }
        say(
          `contacts-import round ${run + 1}: new rows ${fresh.import.at(-1)!.toFixed(0)} ms vs ${fresh.baseline.at(-1)!.toFixed(0)} ms; ` +
            `all duplicates ${again.import.at(-1)!.toFixed(0)} ms vs ${again.baseline.at(-1)!.toFixed(0)} ms`,
        );
      }
      const rows_: Row[] = [
        ratioRow(
          {
            id: 'import_vs_raw',
            label: '5,000-row contacts import (new rows)',
            unit: 'ms',
            baselineLabel: 'raw driver: 2 × $in + insertMany',
            target: { op: '<=', limit: 2 },
          },
          fresh.import,
          fresh.baseline,
        ),
        ratioRow(
          {
            id: 'import_duplicates_vs_raw',
            label: '5,000-row re-import (all duplicates)',
            unit: 'ms',
            baselineLabel: 'raw driver: 2 × $in',
          },
          again.import,
          again.baseline,
        ),
      ];
      return rows_;
    } finally {
      await app.close();
    }
  },
};
