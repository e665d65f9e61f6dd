import { quote, type ErrorDetail } from '../../platform/errors.js';
import { EVENT_TYPES } from '../events/event-types.js';
import type { WorkflowEdge, WorkflowNode } from './graph.js';

// The node vocabulary a workflow runs (docs/workflows.md#nodes): the React Flow `type` of a node
// and the fields of its `data`. The graph is stored verbatim; this reads it. A node of a type not
// listed here (a note, a group: pure UI) is kept and skipped. What would make an active workflow
// unrunnable is found here, each problem naming its node: no trigger, a cycle without a `wait`,
// an action without a field it needs, a branch edge without its handle.

export const TRIGGER = 'trigger.event';
export const CONTROL_TYPES = [TRIGGER, 'condition', 'wait', 'wait_for'] as const;
export const ACTION_TYPES = [
  'send_email',
  'notify_slack',
  'clio.create_matter',
  'clio.create_task',
  'clio.add_note',
  'call',
  'add_to_campaign',
  'update_lead',
  'webhook',
] as const;
export type ActionType = (typeof ACTION_TYPES)[number];
export type NodeType = (typeof CONTROL_TYPES)[number] | ActionType;

export const OPERATORS = [
  'equals',
  'not_equals',
  'contains',
  'not_contains',
  'in',
  'not_in',
  'exists',
  'not_exists',
  'gt',
  'gte',
  'lt',
  'lte',
] as const;
export type Operator = (typeof OPERATORS)[number];

/** One structured test: the value at `field` (a dotted path), an operator, a value. */
export interface Condition {
  field: string;
  operator: Operator;
  value?: unknown;
}

/** The branches (sourceHandle) of the nodes that branch. */
export const BRANCHES: Partial<Record<NodeType, readonly string[]>> = {
  condition: ['true', 'false'],
  wait_for: ['matched', 'timeout'],
};

export interface Duration {
  days?: number;
  hours?: number;
  minutes?: number;
  seconds?: number;
}

const MAX_WAIT_MS = 366 * 86_400_000;

export function isKnownType(type: unknown): type is NodeType {
  return (
    typeof type === 'string' &&
    ((CONTROL_TYPES as readonly string[]).includes(type) ||
      (ACTION_TYPES as readonly string[]).includes(type))
  );
}

export const isAction = (type: string): type is ActionType =>
  (ACTION_TYPES as readonly string[]).includes(type);

/** An event pattern: an event type, or `<group>.*` (e.g. `appointment.*`). */
export function isEventPattern(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  if ((EVENT_TYPES as readonly string[]).includes(value)) return true;
  if (!value.endsWith('.*')) return false;
  const group = value.slice(0, -1);
  return EVENT_TYPES.some((t) => t.startsWith(group));
}

export const eventMatches = (pattern: string, type: string): boolean =>
  pattern.endsWith('.*') ? type.startsWith(pattern.slice(0, -1)) : pattern === type;

/**
 * Every trigger pattern that matches `type`: the type itself and each group above it
 * (`contacts.import.completed`: `contacts.import.*` and `contacts.*`), the keys a trigger index
 * is looked up by.
 */
export function patternsMatching(type: string): string[] {
  const patterns = [type];
  for (let dot = type.lastIndexOf('.'); dot > 0; dot = type.lastIndexOf('.', dot - 1)) {
    patterns.push(`${type.slice(0, dot)}.*`);
  }
  return patterns;
}

/** The milliseconds of a duration object, or null when it is not one (> 0, at most a year). */
export function durationMs(value: unknown): number | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const d = value as Record<string, unknown>;
  const units: Array<[string, number]> = [
    ['days', 86_400_000],
    ['hours', 3_600_000],
    ['minutes', 60_000],
    ['seconds', 1000],
  ];
  let ms = 0;
  let any = false;
  for (const [unit, size] of units) {
    const n = d[unit];
    if (n === undefined) continue;
    if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return null;
    ms += n * size;
    any = true;
  }
  return any && ms > 0 && ms <= MAX_WAIT_MS ? Math.round(ms) : null;
}

/** `HH:MM` (24 h) as minutes of the day, or null. */
export function clockMinutes(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const m = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(value);
  return m === null ? null : Number(m[1]) * 60 + Number(m[2]);
}

/** The conditions of a trigger's filter or a condition node: one, or a list under `conditions`. */
export function conditionsOf(data: Record<string, unknown>, key: 'filter' | 'self'): unknown[] {
  const source = key === 'filter' ? data.filter : data;
  if (source === undefined || source === null) return [];
  if (Array.isArray(source)) return source;
  if (typeof source !== 'object') return [source];
  const s = source as Record<string, unknown>;
  if (Array.isArray(s.conditions)) return s.conditions;
  return key === 'self' && s.field === undefined ? [] : [s];
}

export const matchModeOf = (data: Record<string, unknown>, key: 'filter' | 'self'): 'all' | 'any' => {
  const source = key === 'filter' ? data.filter : data;
  return typeof source === 'object' && source !== null && (source as { match?: unknown }).match === 'any'
    ? 'any'
    : 'all';
};

function conditionProblem(c: unknown): string | null {
  if (typeof c !== 'object' || c === null || Array.isArray(c))
    return 'is not a condition {field, operator, value}';
  const { field, operator } = c as Record<string, unknown>;
  if (typeof field !== 'string' || field === '')
    return 'needs "field", a dotted path such as "event.data.case_type"';
  if (!(OPERATORS as readonly string[]).includes(operator as string)) {
    return `needs "operator", one of ${OPERATORS.join(', ')}`;
  }
  return null;
}

/** The data of a node as an object (absent or not an object: empty). */
export const dataOf = (node: WorkflowNode): Record<string, unknown> =>
  typeof node.data === 'object' && node.data !== null && !Array.isArray(node.data)
    ? (node.data as Record<string, unknown>)
    : {};

const nonEmptyString = (v: unknown): v is string => typeof v === 'string' && v.trim() !== '';

/** The required fields of each action: a problem message for each one missing, keyed by field. */
function actionProblems(type: ActionType, data: Record<string, unknown>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const need = (field: string, ok: boolean, what: string) => {
    if (!ok) out.push([field, what]);
  };
  switch (type) {
    case 'send_email': {
      const to = data.to;
      need(
        'to',
        to === 'firm' ||
          to === 'lead' ||
          (Array.isArray(to) && to.length > 0 && to.every((t) => nonEmptyString(t) && t.includes('@'))),
        'needs "to": "firm" (the notification emails), "lead", or a list of email addresses',
      );
      need('subject', nonEmptyString(data.subject), 'needs "subject"');
      need('body', nonEmptyString(data.body), 'needs "body"');
      break;
    }
    case 'notify_slack':
      need('text', nonEmptyString(data.text), 'needs "text"');
      break;
    case 'clio.create_matter':
      need('description', nonEmptyString(data.description), 'needs "description"');
      break;
    case 'clio.create_task': {
      need('name', nonEmptyString(data.name), 'needs "name"');
      const days = data.due_in_days;
      need(
        'due_in_days',
        days === undefined || (Number.isInteger(days) && (days as number) >= 0 && (days as number) <= 3650),
        '"due_in_days" must be a whole number of days from 0 to 3650',
      );
      const assignee = data.assignee_id;
      need(
        'assignee_id',
        assignee === undefined || (Number.isInteger(assignee) && (assignee as number) > 0),
        '"assignee_id" must be a Clio user id (a positive whole number)',
      );
      need(
        'description',
        data.description === undefined || typeof data.description === 'string',
        '"description" must be a string',
      );
      break;
    }
    case 'clio.add_note':
      need('subject', nonEmptyString(data.subject), 'needs "subject"');
      need('detail', nonEmptyString(data.detail), 'needs "detail"');
      break;
    case 'call':
      need('agent_id', nonEmptyString(data.agent_id), 'needs "agent_id", the agent that makes the call');
      break;
    case 'add_to_campaign':
      need('campaign_id', nonEmptyString(data.campaign_id), 'needs "campaign_id"');
      break;
    case 'update_lead': {
      const tagsOk =
        data.tags === undefined || (Array.isArray(data.tags) && data.tags.every((t) => nonEmptyString(t)));
      need('tags', tagsOk, '"tags" must be a list of strings');
      need(
        'status',
        data.status === undefined
          ? Array.isArray(data.tags) && data.tags.length > 0
          : nonEmptyString(data.status),
        'needs "status" (a string) or "tags" (a list of strings)',
      );
      break;
    }
    case 'webhook': {
      // A URL and a secret in the graph would be shown to whoever reads the workflow, and sent
      // unretried: the step delivers to one of the firm's webhook endpoints instead.
      need(
        'endpoint_id',
        nonEmptyString(data.endpoint_id),
        'needs "endpoint_id", one of the firm\'s webhook endpoints (POST /api/webhook-endpoints)',
      );
      need(
        'secret',
        data.secret === undefined,
        'a secret in a graph is shown to whoever reads it: use "endpoint_id"',
      );
      break;
    }
  }
  return out;
}

/** Nodes by id, and each node's outgoing edges. */
export interface RunnableGraph {
  nodes: Map<string, WorkflowNode>;
  index: Map<string, number>;
  outgoing: Map<string, WorkflowEdge[]>;
  triggers: WorkflowNode[];
}

export function runnableGraph(nodes: WorkflowNode[], edges: WorkflowEdge[]): RunnableGraph {
  const byId = new Map<string, WorkflowNode>();
  const index = new Map<string, number>();
  nodes.forEach((n, i) => {
    byId.set(n.id, n);
    index.set(n.id, i);
  });
  const outgoing = new Map<string, WorkflowEdge[]>();
  for (const e of edges) {
    const list = outgoing.get(e.source) ?? [];
    list.push(e);
    outgoing.set(e.source, list);
  }
  return { nodes: byId, index, outgoing, triggers: nodes.filter((n) => n.type === TRIGGER) };
}

/** The edges a node's step goes on along: all of them, or those of the branch taken. */
export function nextEdges(graph: RunnableGraph, node: WorkflowNode, branch: string | null): WorkflowEdge[] {
  const out = graph.outgoing.get(node.id) ?? [];
  return branch === null ? out : out.filter((e) => e.sourceHandle === branch);
}

/** A node of a cycle that passes through no `wait` or `wait_for`, or null when there is none. */
function cycleWithoutWait(graph: RunnableGraph): string[] | null {
  const pauses = (id: string) => {
    const type = graph.nodes.get(id)?.type;
    return type === 'wait' || type === 'wait_for';
  };
  const state = new Map<string, 1 | 2>();
  // Iterative DFS (a graph has at most 500 nodes, but a recursion of that depth is avoidable).
  for (const start of graph.nodes.keys()) {
    if (state.has(start) || pauses(start)) continue;
    const stack: Array<{ id: string; next: number }> = [{ id: start, next: 0 }];
    state.set(start, 1);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const edges = (graph.outgoing.get(top.id) ?? []).filter((e) => !pauses(e.target));
      if (top.next >= edges.length) {
        state.set(top.id, 2);
        stack.pop();
        continue;
      }
      const target = edges[top.next++]!.target;
      const seen = state.get(target);
      if (seen === 1) {
        const from = stack.findIndex((s) => s.id === target);
        return stack.slice(from).map((s) => s.id);
      }
      if (seen === undefined) {
        state.set(target, 1);
        stack.push({ id: target, next: 0 });
      }
    }
  }
  return null;
}

/** Every reason the graph could not run, each naming its node by pointer and id. */
export function runnableProblems(nodes: WorkflowNode[], edges: WorkflowEdge[]): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const graph = runnableGraph(nodes, edges);
  if (graph.triggers.length === 0) {
    problems.push({
      path: '/nodes',
      message: `has no "${TRIGGER}" node: an active workflow needs a trigger`,
    });
  }
  nodes.forEach((node, i) => {
    if (!isKnownType(node.type)) return;
    const data = dataOf(node);
    const at = (field: string, message: string) =>
      problems.push({ path: `/nodes/${i}/data/${field}`, message: `${message} (node ${quote(node.id)})` });
    switch (node.type) {
      case TRIGGER:
        if (!isEventPattern(data.event)) {
          at('event', `needs "event", one of ${EVENT_TYPES.join(', ')} or a group such as "appointment.*"`);
        }
        conditionsOf(data, 'filter').forEach((c, k) => {
          const p = conditionProblem(c);
          if (p !== null) at(`filter/${k}`, p);
        });
        break;
      case 'condition': {
        const list = conditionsOf(data, 'self');
        if (list.length === 0) at('field', 'needs a condition: "field", "operator" and "value"');
        list.forEach((c, k) => {
          const p = conditionProblem(c);
          if (p !== null) at(Array.isArray(data.conditions) ? `conditions/${k}` : 'field', p);
        });
        break;
      }
      case 'wait':
        if (data.until !== undefined) {
          if (clockMinutes(data.until) === null) at('until', 'must be a local time "HH:MM" (24 h)');
        } else if (durationMs(data.duration) === null) {
          at(
            'duration',
            'needs "duration" {days, hours, minutes, seconds} (more than 0, at most a year) or "until" "HH:MM"',
          );
        }
        break;
      case 'wait_for':
        if (!isEventPattern(data.event)) at('event', 'needs "event", the event type to wait for');
        if (durationMs(data.within) === null) {
          at(
            'within',
            'needs "within" {days, hours, minutes, seconds}: how long to wait (more than 0, at most a year)',
          );
        }
        break;
      default:
        for (const [field, message] of actionProblems(node.type, data)) at(field, message);
    }
    const branches = BRANCHES[node.type];
    if (branches !== undefined) {
      edges.forEach((e, k) => {
        if (e.source !== node.id) return;
        if (typeof e.sourceHandle !== 'string' || !branches.includes(e.sourceHandle)) {
          problems.push({
            path: `/edges/${k}/sourceHandle`,
            message: `must name the branch it leaves ${quote(node.id)} by: ${branches.map((b) => `"${b}"`).join(' or ')} (edge ${quote(e.id)})`,
          });
        }
      });
    }
  });
  const cycle = cycleWithoutWait(graph);
  if (cycle !== null) {
    const first = cycle[0]!;
    problems.push({
      path: `/nodes/${graph.index.get(first)}`,
      message: `is on a cycle without a "wait" (${cycle.map((id) => quote(id)).join(' → ')}): a run would loop at once (node ${quote(first)})`,
    });
  }
  return problems;
}
