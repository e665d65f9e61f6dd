import type { Static } from '@sinclair/typebox';
import type { WorkflowDoc } from '../../../core/domain/workflows/workflows.js';
import type { CreateWorkflowResponse } from './schema.js';

/**
 * A workflow as the API shows it (WorkflowRecord), as JSON text: {id, name, firmSlug, nodes,
 * edges, created_at, updated_at}. The stored graph text came from JSON.stringify, so it is
 * spliced in as it is (docs/workflows.md): graphs of megabytes are not parsed to be sent.
 */
export function workflowJson(doc: WorkflowDoc): string {
  const text = JSON.stringify;
  return (
    `{"id":${text(doc._id)},"name":${text(doc.name)},"firmSlug":${text(doc.firm)},` +
    `"nodes":${doc.nodes_json},"edges":${doc.edges_json},` +
    `"created_at":${text(doc.created_at.toISOString())},"updated_at":${text(doc.updated_at.toISOString())}}`
  );
}

export const workflowListJson = (docs: WorkflowDoc[]): string => `[${docs.map(workflowJson).join(',')}]`;

/** A workflow just stored, as creating it answers. */
export function createdWorkflowView(
  doc: Pick<WorkflowDoc, '_id' | 'name'>,
): Static<typeof CreateWorkflowResponse> {
  return { id: doc._id, name: doc.name };
}
