import type { Filter } from 'mongodb';
import type { Services } from '../../wiring/services.js';
import { keysetPage } from '../../platform/db/keyset-cursor.js';
import { dialDecisionsCollection, type DialDecisionDoc } from './dial-decisions.js';

// Reading the audit: a firm's decisions newest first (keyset pages over firm [+ phone], at, _id)
// and the same rows streamed for an export (one cursor).

export interface DecisionFilter {
  phone?: string;
  /** Inclusive lower bound of `at`. */
  from?: Date;
  /** Exclusive upper bound of `at`. */
  to?: Date;
}

function filterOf(firm: string, f: DecisionFilter): Filter<DialDecisionDoc> {
  const at: Record<string, Date> = {};
  if (f.from !== undefined) at.$gte = f.from;
  if (f.to !== undefined) at.$lt = f.to;
  return {
    firm,
    ...(f.phone === undefined ? {} : { phone: f.phone }),
    ...(Object.keys(at).length === 0 ? {} : { at }),
  } as Filter<DialDecisionDoc>;
}

export async function listDecisions(
  services: Services,
  firm: string,
  f: DecisionFilter,
  limit: number,
  cursor: string | undefined,
): Promise<{ decisions: DialDecisionDoc[]; next_cursor: string }> {
  const scope = `dial-decisions:${f.phone ?? ''}:${f.from?.getTime() ?? ''}:${f.to?.getTime() ?? ''}`;
  const page = await keysetPage(
    dialDecisionsCollection(services.mongo.db),
    {
      secret: services.config.sessionSecret,
      scope,
      firm,
      order: { primary: { field: 'at', kind: 'date' }, tie: '_id' },
    },
    filterOf(firm, f),
    limit,
    cursor,
  );
  return { decisions: page.rows, next_cursor: page.next_cursor };
}

/** Every decision of the filter, newest first, from one cursor (the export). */
export function streamDecisions(services: Services, firm: string, f: DecisionFilter) {
  return dialDecisionsCollection(services.mongo.db)
    .find(filterOf(firm, f))
    .sort({ at: -1, _id: -1 })
    .batchSize(500);
}
