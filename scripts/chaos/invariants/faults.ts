import { row, type Row } from './rows.js';
import type { CheckContext } from './context.js';

/** The faults as they ran: kills, SIGTERMs, stops and starts, failing Slack and Clio. */
export function faultRows(ctx: CheckContext): Row[] {
  const { ledger, faults } = ctx;
  const rows: Row[] = [];
  const kills = ledger.faults.filter((f) => f.kind === 'SIGKILL worker');
  rows.push(
    row(
      'faults: workers SIGKILLed and started again',
      faults.plan.workerKills,
      `${kills.length} (jobs active at each: ${ledger.kills.map((k) => k.activeAtKill).join(', ') || '-'})`,
      kills.length === faults.plan.workerKills && kills.every((k) => k.ok),
    ),
  );
  for (const t of ledger.sigterms) {
    rows.push(
      row(
        'fault: SIGTERM at a busy moment: exit 0 within 25 s',
        'exit 0, < 25 s',
        `exit ${t.exitCode}, ${(t.afterMs / 1000).toFixed(1)} s (${t.activeAtSignal} jobs active, ${t.handedBack} handed back)`,
        t.exitCode === 0 && t.afterMs < 25_000,
      ),
    );
  }
  for (const f of ledger.faults.filter((x) => x.kind.includes('stop/start'))) {
    rows.push(
      row(`fault: ${f.kind}`, 'ready again', `${(f.durationMs / 1000).toFixed(1)} s down; ${f.detail}`, f.ok),
    );
  }
  const slack = ledger.faults.find((f) => f.kind.startsWith('slack'));
  if (slack !== undefined)
    rows.push(
      row(
        'fault: Slack failing 50 % for a while',
        '> 0 failed',
        `${faults.slackFailed} failed`,
        faults.slackFailed > 0,
      ),
    );
  if (faults.plan.clio429)
    rows.push(
      row('fault: Clio answering 429 now and then', '> 0', `${faults.clio429s} × 429`, faults.clio429s > 0),
    );
  return rows;
}
