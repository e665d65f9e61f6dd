import type { DncEntry } from './dnc-store.js';

/** A do-not-call entry as the API shows it, and as dnc.added carries it (docs/events.md). */
export function dncEntryView(entry: DncEntry) {
  return {
    phone: entry.phone,
    firm: entry.firm,
    source: entry.source,
    reason: entry.reason,
    evidence: entry.evidence ?? null,
    added_at: entry.added_at.toISOString(),
    added_by: entry.added_by,
  };
}
