import type { Services } from '../../../wiring/services.js';
import { keysetPage } from '../../../platform/db/keyset-cursor.js';
import { runsCollection, stepsCollection, type WorkflowRunDoc, type WorkflowStepDoc } from './run-store.js';

// Reading runs: a workflow's runs newest first (keyset pages over workflow_id, started_at, _id)
// and one run with its steps (point reads of the step ids the run lists).

export async function listRuns(
  services: Services,
  firm: string,
  workflowId: string,
  limit: number,
  cursor: string | undefined,
): Promise<{ runs: WorkflowRunDoc[]; next_cursor: string }> {
  const page = await keysetPage(
    runsCollection(services.mongo.db),
    {
      secret: services.config.sessionSecret,
      scope: `workflow-runs:${workflowId}`,
      firm,
      order: { primary: { field: 'started_at', kind: 'date' }, tie: '_id' },
    },
    { workflow_id: workflowId },
    limit,
    cursor,
  );
  return { runs: page.rows.filter((r) => r.firm === firm), next_cursor: page.next_cursor };
}

/** Point reads in small batches, in the run's order. */
export async function stepsOf(services: Services, run: WorkflowRunDoc): Promise<WorkflowStepDoc[]> {
  const steps: WorkflowStepDoc[] = [];
  for (let i = 0; i < run.step_ids.length; i += 16) {
    const batch = run.step_ids.slice(i, i + 16);
    const docs = await Promise.all(
      batch.map((id) => stepsCollection(services.mongo.db).findOne({ _id: id })),
    );
    for (const doc of docs) if (doc !== null) steps.push(doc);
  }
  return steps;
}

export async function findRun(
  services: Services,
  firm: string,
  runId: string,
): Promise<WorkflowRunDoc | null> {
  const run = await runsCollection(services.mongo.db).findOne({ _id: runId });
  return run !== null && run.firm === firm ? run : null;
}
