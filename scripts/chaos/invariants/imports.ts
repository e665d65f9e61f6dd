import { COLLECTIONS } from '../../../core/platform/db/collections.js';
import { countBy, row, summary, type Row } from './rows.js';
import type { CheckContext } from './context.js';

/** The contacts import: its counts, and every imported contact stored once. */
export async function importRows(ctx: CheckContext): Promise<Row[]> {
  const { cluster, ledger, firms } = ctx;
  const rows: Row[] = [];
  const db = cluster.db;
  for (const imp of ledger.imports) {
    rows.push(
      row(
        'contacts import: answered 200; imported / duplicates / errors',
        `200; ${imp.expected.imported} / ${imp.expected.duplicates} / ${imp.expected.errors}`,
        `${imp.status}; ${imp.result?.imported} / ${imp.result?.duplicates} / ${imp.result?.errors}`,
        imp.status === 200 &&
          imp.result?.imported === imp.expected.imported &&
          imp.result.duplicates === imp.expected.duplicates &&
          imp.result.errors === imp.expected.errors,
      ),
    );
    const contacts = (await db
      .collection(COLLECTIONS.contacts)
      .find({ firm: firms.imports.slug }, { projection: { phone: 1, email: 1 } })
      .toArray()) as unknown as Array<{ phone?: string; email?: string }>;
    const phones = countBy(contacts.map((c) => c.phone ?? ''));
    const emails = countBy(contacts.map((c) => c.email ?? ''));
    const bad = imp.phones
      .map((p, i) => [p, imp.emails[i]!] as const)
      .filter(([p, e]) => phones.get(p) !== 1 || emails.get(e) !== 1)
      .map(([p, e]) => `${p}/${e}: ${phones.get(p) ?? 0}/${emails.get(e) ?? 0}`);
    rows.push(
      row(
        'contacts import: every imported contact present once, nothing else',
        `${imp.phones.length} contacts`,
        summary(contacts.length, bad),
        bad.length === 0 && contacts.length === imp.phones.length,
      ),
    );
  }
  return rows;
}
