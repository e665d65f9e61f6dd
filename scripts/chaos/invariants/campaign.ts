import { sendOnce } from '../http.js';
import { row, summary, type Row } from './rows.js';
import type { CallFacts, CallRow, CheckContext } from './context.js';

/** The campaign: launched once, every lead called exactly once (retries aside), counts add up. */
export async function campaignRows(ctx: CheckContext, facts: CallFacts): Promise<Row[]> {
  const { cluster, ledger, firms } = ctx;
  const { calls, dialsByCall } = facts;
  const rows: Row[] = [];
  const campaign = ledger.campaign;
  if (campaign !== undefined) {
    const expectedQueued = campaign.phones.size;
    rows.push(
      row(
        'campaign launch: 200, calls_queued = distinct callable leads',
        `200, ${expectedQueued}`,
        `${campaign.launchStatus}, ${campaign.callsQueued}`,
        campaign.launchStatus === 200 && campaign.callsQueued === expectedQueued,
      ),
    );
    const campaignCalls = calls.filter((c) => c.campaign_id === campaign.id);
    const byPhone = new Map<string, CallRow[]>();
    for (const c of campaignCalls)
      byPhone.set(c.to_number ?? '', [...(byPhone.get(c.to_number ?? '') ?? []), c]);
    let expectedRecords = 0;
    const wrongCount: string[] = [];
    const wrongOutcome: string[] = [];
    const wrongDials: string[] = [];
    let dialled = 0;
    for (const [phone, kind] of campaign.phones) {
      const want = kind === 'no_answer' ? 3 : 1;
      expectedRecords += want;
      const got = byPhone.get(phone) ?? [];
      if (got.length !== want || new Set(got.map((c) => c.campaign_attempt)).size !== got.length) {
        wrongCount.push(`${phone}: ${got.length} calls`);
      }
      const status = kind === 'answered' ? 'ended' : kind === 'no_answer' ? 'not_connected' : 'error';
      if (got.some((c) => c.status !== status))
        wrongOutcome.push(`${phone}: ${got.map((c) => c.status).join('/')}`);
      for (const c of got) {
        const n = dialsByCall.get(c._id) ?? 0;
        dialled += n;
        if (n !== (kind === 'error' ? 0 : 1)) wrongDials.push(`${c._id}: ${n} dials`);
      }
    }
    const expectedDials = expectedRecords - [...campaign.phones.values()].filter((k) => k === 'error').length;
    rows.push(
      row(
        'campaign: every lead called exactly once (+2 retries if not_connected)',
        `${expectedRecords} call records over ${campaign.phones.size} leads`,
        summary(campaignCalls.length, wrongCount),
        wrongCount.length === 0 && campaignCalls.length === expectedRecords,
      ),
    );
    rows.push(
      row(
        'campaign: provider dials = call records (9999: refused, no dial)',
        expectedDials,
        wrongDials.length === 0 ? dialled : `${dialled}; ✗ ${wrongDials.slice(0, 3).join(', ')}`,
        wrongDials.length === 0 && dialled === expectedDials,
      ),
    );
    rows.push(
      row(
        'campaign: each call ended as its number says (answered / 0000 / 9999)',
        campaignCalls.length,
        summary(campaignCalls.length, wrongOutcome),
        wrongOutcome.length === 0,
      ),
    );
    const view = await sendOnce(undefined, cluster.webUrl, 'GET', `/api/leads/campaigns/${campaign.id}`, {
      route: 'GET campaign',
      token: firms.campaign.key,
    });
    const answered = [...campaign.phones.values()].filter((k) => k === 'answered').length;
    const counts = view.body as {
      status: string;
      calls_queued: number;
      calls_completed: number;
      calls_failed: number;
    } | null;
    rows.push(
      row(
        'campaign: completed; calls_completed + calls_failed = calls_queued',
        `completed, ${answered} + ${expectedQueued - answered} = ${expectedQueued}`,
        `${counts?.status}, ${counts?.calls_completed} + ${counts?.calls_failed} = ${counts?.calls_queued}`,
        counts?.status === 'completed' &&
          counts.calls_completed === answered &&
          counts.calls_failed === expectedQueued - answered &&
          counts.calls_queued === expectedQueued,
      ),
    );
  }
  return rows;
}
