// What every check is given: the run's processes and ledger, and the call records and provider
// dials read once for the checks that need them.
import { COLLECTIONS } from '../../../core/platform/db/collections.js';
import type { Cluster } from '../cluster.js';
import type { Faults } from '../faults.js';
import type { Ledger } from '../ledger.js';
import type { Firms, Workload, WorkloadTiming } from '../workload.js';

export interface CheckContext {
  cluster: Cluster;
  ledger: Ledger;
  firms: Firms;
  timing: WorkloadTiming;
  faults: Faults;
  workload: Workload;
  /** How much Redis may hold at the end beyond its start (bounded job history, reminders). */
  redisGrowthBudget: number;
  say: (line: string) => void;
}

export const EFFECTS = ['lead', 'crm', 'email', 'team_chat'] as const;

export interface CallRow {
  _id: string;
  firm: string;
  status: string;
  disconnection_reason?: string | null;
  to_number: string | null;
  campaign_id?: string;
  campaign_attempt?: number;
  effects?: Partial<Record<(typeof EFFECTS)[number], { state: string }>>;
  extraction?: { email: string | null; phone: string | null };
}

/** The calls of the campaign and direct firms, and how often the provider dialled each. */
export interface CallFacts {
  callFirms: string[];
  calls: CallRow[];
  callById: Map<string, CallRow>;
  dialsByCall: Map<string, number>;
}

export async function readCallFacts(ctx: CheckContext): Promise<CallFacts> {
  const { cluster, firms } = ctx;
  const db = cluster.db;
  const callFirms = [firms.campaign.slug, firms.direct.slug];
  const calls = (await db
    .collection(COLLECTIONS.calls)
    .find(
      { firm: { $in: callFirms } },
      {
        projection: {
          firm: 1,
          status: 1,
          disconnection_reason: 1,
          to_number: 1,
          campaign_id: 1,
          campaign_attempt: 1,
          effects: 1,
          extraction: 1,
        },
      },
    )
    .toArray()) as unknown as CallRow[];
  // Each call's effect records live in its effects document (`_id` = the call's), one point read each.
  const records = db.collection<{ _id: string; effects?: CallRow['effects'] }>(COLLECTIONS.callEffects);
  for (let i = 0; i < calls.length; i += 50) {
    await Promise.all(
      calls.slice(i, i + 50).map(async (c) => {
        const found = await records.findOne({ _id: c._id }, { projection: { effects: 1 } });
        if (found?.effects !== undefined) c.effects = { ...c.effects, ...found.effects };
      }),
    );
  }
  const callById = new Map(calls.map((c) => [c._id, c]));
  const dials = (await db
    .collection(COLLECTIONS.simulatorCalls)
    .find({}, { projection: { to_number: 1, 'metadata.call_id': 1 } })
    .toArray()) as unknown as Array<{ to_number: string; metadata: { call_id: string } }>;
  const dialsByCall = new Map<string, number>();
  for (const d of dials) dialsByCall.set(d.metadata.call_id, (dialsByCall.get(d.metadata.call_id) ?? 0) + 1);

  return { callFirms, calls, callById, dialsByCall };
}
