import { withLeadLock } from '../../leads/lead-lock.js';
import type { Services } from '../../../wiring/services.js';
import { CrmError } from '../../../integrations/crm/clio.js';
import { TeamChatError, postToSlack, slackEscape } from '../../../integrations/team-chat/slack.js';
import { urlPolicyOf } from '../../../platform/config.js';
import { runEffect } from '../../../platform/db/effect-recorder.js';
import type { Attempt, Effect, EffectOutcome } from '../../../platform/db/effect-records.js';
import { shorten } from '../../../platform/text.js';
import { clock } from '../../../platform/clock.js';
import type { FirmDoc } from '../../firms/firms.js';
import type { LeadDoc } from '../../leads/leads.js';
import { firmEndpoints, type WebhookEndpointDoc } from '../../events/endpoints.js';
import { publicDeliveryId, sendWorkflowDelivery } from '../../events/deliveries.js';
import { leadsCollection } from '../../leads/leads.js';
import { changedFields, recordLeadUpdated } from '../../leads/record-lead-events.js';
import { firmClioClient } from '../../crm/firm-clio-client.js';
import { existingContact, personName } from '../../call-analysis/crm-sync.js';
import { smtpCode } from '../../call-analysis/call-effects.js';
import { findAgent } from '../../agents/agents.js';
import { registerOutboundCall } from '../../calls/calls.js';
import { parseDialable } from '../../contact-points/phones.js';
import { decideAtRequest } from '../../compliance/dial-gate.js';
import { addCampaignLeads } from '../../campaigns/campaigns.js';
import { findCampaign } from '../../campaigns/campaign-store.js';
import { render, type Context } from '../expressions.js';
import { valueAt } from '../../../platform/own.js';
import type { ActionType } from '../vocabulary.js';
import type { RunnableGraph } from '../vocabulary.js';
import { stepDigest, stepSubject, stepsCollection, type WorkflowStepDoc } from './run-store.js';

// The actions of a workflow (docs/workflows.md#nodes). Each has a preview — what it would send,
// computed from the node's data, the run's context and the firm's settings, with no effect: the
// dry run shows it — and a perform that sends that, run by the effect recorder on the step's
// document (a step killed mid-way neither repeats nor loses its email, message, matter or call).

type Result = Record<string, unknown>;

export interface ActionInput {
  services: Services;
  firm: FirmDoc;
  lead: LeadDoc | null;
  data: Record<string, unknown>;
  context: Context;
  /** The step's id (a dry run has a made-up one): ids sent outside derive from it. */
  stepId: string;
  /** The latest `clio.create_matter` on the step's path, if any. */
  matterFrom?: MatterFrom;
  /**
   * The workflows whose runs led to the run's event (DomainEvent.caused_by_workflows): an event
   * the step records names them and the run's own workflow after them.
   */
  causedBy?: readonly string[];
}

interface ActionDefinition {
  effect: Omit<Effect<Result>, 'path' | 'boundMs'>;
  /**
   * The longest the action's request may be out (Effect.boundMs): for what cannot be asked about
   * afterwards, so that its lease outlasts its request whatever becomes of the renewals.
   */
  boundMs?: (config: Services['config']) => number;
  /** What the action would send; `skip`: why it would not run. */
  preview(input: ActionInput): Promise<{ skip?: string; blocked?: string; would: Result }>;
  perform(
    input: ActionInput & { step: WorkflowStepDoc; attempt: Attempt; would: Result; signal: AbortSignal },
  ): Promise<EffectOutcome<Result>>;
}

function recipients(input: ActionInput): string[] {
  const to = input.data.to;
  if (to === 'firm') return input.firm.settings.notification_emails;
  if (to === 'lead') return input.lead?.email ? [input.lead.email] : [];
  return Array.isArray(to)
    ? to.filter((t): t is string => typeof t === 'string').map((t) => render(t, input.context))
    : [];
}

/** The lead's number, or the node's `to` (a template), in E.164; null when there is none. */
function callee(input: ActionInput): string | null {
  const raw =
    input.data.to === undefined ? (input.lead?.phone ?? null) : render(input.data.to, input.context);
  return raw === null || raw === '' ? null : (parseDialable(raw)?.e164 ?? raw);
}

/** Our call id for the call a step places: derived from the step, so creating it is a claim. */
export const workflowCallId = (stepId: string): string => `call_wf${stepDigest(stepId)}`;

const crmEffect = {
  mayHaveHappened: (err: unknown) => !(err instanceof CrmError) || err.mayHaveHappened,
  isFinal: (err: unknown) => err instanceof CrmError && err.final,
};

/** The Clio Person of the run's lead, found or created once (its own effect on the step). */
async function clioContact(
  input: ActionInput & { step: WorkflowStepDoc; attempt: Attempt },
): Promise<number> {
  const client = (await firmClioClient(input.services, input.firm))!;
  const lead = input.lead!;
  const record = await runEffect<{ contact_id: number }>(
    stepSubject(input.services, input.step),
    {
      path: 'clio_contact',
      ...crmEffect,
      reconcile: async () => {
        const found = await existingContact(client, lead, async () => null);
        return found === null ? null : { state: 'done', result: { contact_id: found.id } };
      },
    },
    input.attempt,
    async () => {
      const found = await existingContact(client, lead, async () => null);
      if (found !== null) return { state: 'done', result: { contact_id: found.id } };
      const id = await client.createPerson({ ...personName(lead), email: lead.email, phone: lead.phone });
      return { state: 'done', result: { contact_id: id } };
    },
  );
  return record.result!.contact_id;
}

const DAY_MS = 86_400_000;

/** The latest `clio.create_matter` on a step's path: its node, and the step that ran it (none in a dry run). */
export interface MatterFrom {
  nodeId: string;
  stepId: string | null;
}

/**
 * The latest node on a path (visits in the order they happened) that creates a Clio matter;
 * `stepId` names its step (null in a dry run). Null when the path has none.
 */
export function matterOnPath(
  graph: RunnableGraph,
  visits: Array<{ node: string; n: number }>,
  stepId: ((node: string, n: number) => string) | null,
): MatterFrom | null {
  for (const { node, n } of [...visits].reverse()) {
    if (graph.nodes.get(node)?.type === 'clio.create_matter')
      return { nodeId: node, stepId: stepId === null ? null : stepId(node, n) };
  }
  return null;
}

/** The matter the path's `clio.create_matter` step made, or null (none on the path, or it made none). */
async function runMatter(input: ActionInput): Promise<number | null> {
  const stepId = input.matterFrom?.stepId;
  if (stepId === undefined || stepId === null) return null;
  const step = await stepsCollection(input.services.mongo.db).findOne(
    { _id: stepId },
    { projection: { effect: 1 } },
  );
  const id = step?.effect?.state === 'done' ? step.effect.result?.matter_id : undefined;
  return typeof id === 'number' ? id : null;
}

/** Our reference for what a step creates in Clio, written in its text: how a retry finds it. */
const clioReference = (stepId: string): string => `wf_${stepDigest(stepId)}`;
const withReference = (text: string, reference: string): string =>
  `${text === '' ? '' : `${text}\n\n`}Workflow reference: ${reference}`;

const clioSkip = async (input: ActionInput): Promise<string | undefined> => {
  if (input.firm.settings.crm.provider !== 'clio') return 'The firm has no CRM configured (settings.crm).';
  if (input.lead === null) return 'The event is about no lead.';
  if (input.lead.phone === null && input.lead.email === null)
    return 'The lead has no phone number or email address.';
  return undefined;
};

export const ACTIONS: Record<ActionType, ActionDefinition> = {
  send_email: {
    effect: {
      mayHaveHappened: (err) => smtpCode(err) === null,
      isFinal: (err) => (smtpCode(err) ?? 0) >= 500,
    },
    boundMs: (config) => config.smtpSendTimeoutMs,
    async preview(input) {
      const to = recipients(input);
      const would = {
        to,
        subject: shorten(render(input.data.subject, input.context).replace(/[\r\n]+/g, ' '), 200),
        text: render(input.data.body, input.context),
      };
      if (input.services.mailer === null)
        return { skip: 'Email is not configured for the service (SMTP_URL).', would };
      return to.length === 0 ? { skip: 'No recipient: the list is empty.', would } : { would };
    },
    async perform({ services, would, stepId, signal }) {
      const host = new URL(services.config.publicBaseUrl).hostname || 'intake.invalid';
      const sent = await services.mailer!.send({
        to: would.to as string[],
        subject: would.subject as string,
        text: would.text as string,
        // Derived from the step: a repeated send (an attempt whose outcome was lost) is recognisable.
        messageId: `<workflow-step.${stepDigest(stepId)}@${host}>`,
        signal,
      });
      return { state: 'done', result: { message_id: sent.messageId, accepted: sent.accepted } };
    },
  },
  notify_slack: {
    effect: {
      mayHaveHappened: (err) => !(err instanceof TeamChatError) || err.mayHaveBeenSent,
      isFinal: (err) => err instanceof TeamChatError && err.final,
    },
    boundMs: (config) => config.slackTimeoutMs,
    async preview(input) {
      // The values a template inserts are escaped for Slack's mrkdwn (a lead named `<!channel>`
      // mentions no one); the firm's own text around them keeps its markup.
      const would = { text: render(input.data.text, input.context, slackEscape) };
      return input.firm.settings.slack_webhook_url === undefined
        ? { skip: 'The firm has no slack_webhook_url.', would }
        : { would };
    },
    async perform({ services, firm, would, signal }) {
      await postToSlack(
        firm.settings.slack_webhook_url!,
        { text: would.text as string },
        { policy: urlPolicyOf(services.config), timeoutMs: services.config.slackTimeoutMs, signal },
      );
      return { state: 'done', result: { channel: 'slack' } };
    },
  },
  'clio.create_matter': {
    effect: crmEffect,
    async preview(input) {
      const would = {
        description: shorten(render(input.data.description, input.context), 255),
        status: input.data.status === 'open' ? 'open' : 'pending',
        client: input.lead === null ? null : personName(input.lead),
      };
      const skip = await clioSkip(input);
      return skip === undefined ? { would } : { skip, would };
    },
    async perform(input) {
      const client = (await firmClioClient(input.services, input.firm))!;
      const clientId = await clioContact(input);
      const reference = `wf_${stepDigest(input.stepId)}`;
      const existing = await client.findMatterByReference(clientId, reference);
      const id =
        existing ??
        (await client.createMatter({
          clientId,
          description: input.would.description as string,
          status: input.would.status as 'open' | 'pending',
          reference,
        }));
      return { state: 'done', result: { contact_id: clientId, matter_id: id } };
    },
  },
  'clio.create_task': {
    effect: crmEffect,
    async preview(input) {
      const days = input.data.due_in_days;
      const assignee = input.data.assignee_id;
      const would = {
        name: shorten(render(input.data.name, input.context), 255),
        description: render(input.data.description ?? '', input.context),
        due_at: typeof days === 'number' ? new Date(clock.now() + days * DAY_MS).toISOString() : null,
        assignee: { type: 'User', id: typeof assignee === 'number' ? assignee : 'the connected Clio user' },
        matter_from_node: input.matterFrom?.nodeId ?? null,
        reference: clioReference(input.stepId),
      };
      return input.firm.settings.crm.provider === 'clio'
        ? { would }
        : { skip: 'The firm has no CRM configured (settings.crm).', would };
    },
    async perform(input) {
      const client = (await firmClioClient(input.services, input.firm))!;
      const would = input.would;
      const reference = would.reference as string;
      const matterId = await runMatter(input);
      const existing = await client.findTaskByReference(reference, matterId);
      if (existing !== null) return { state: 'done', result: { task_id: existing, matter_id: matterId } };
      const assignee = (would.assignee as { id: unknown }).id;
      const id = await client.createTask({
        name: would.name as string,
        description: withReference(would.description as string, reference),
        dueAt: would.due_at as string | null,
        assignee: {
          type: 'User',
          id: typeof assignee === 'number' ? assignee : await client.currentUserId(),
        },
        matterId,
      });
      return { state: 'done', result: { task_id: id, matter_id: matterId } };
    },
  },
  'clio.add_note': {
    effect: crmEffect,
    async preview(input) {
      const would = {
        subject: shorten(render(input.data.subject, input.context), 255),
        detail: render(input.data.detail, input.context),
        type: input.matterFrom === undefined ? 'Contact' : 'Matter',
        matter_from_node: input.matterFrom?.nodeId ?? null,
        reference: clioReference(input.stepId),
      };
      const skip = await clioSkip(input);
      return skip === undefined ? { would } : { skip, would };
    },
    async perform(input) {
      const client = (await firmClioClient(input.services, input.firm))!;
      const would = input.would;
      const reference = would.reference as string;
      const contactId = await clioContact(input);
      const matterId = await runMatter(input);
      const regarding = { matterId, contactId };
      const existing = await client.findNoteByReference(reference, regarding);
      const id =
        existing ??
        (await client.createNote({
          subject: would.subject as string,
          detail: withReference(would.detail as string, reference),
          ...regarding,
        }));
      return {
        state: 'done',
        result: {
          note_id: id,
          type: matterId === null ? 'Contact' : 'Matter',
          matter_id: matterId,
          contact_id: contactId,
        },
      };
    },
  },
  call: {
    // The call is a claim on an id derived from the step; its dial is its own effect (once per call id).
    effect: {},
    async preview(input) {
      const to = callee(input);
      const agentId = render(input.data.agent_id, input.context);
      const variables =
        typeof input.data.dynamic_variables === 'object' && input.data.dynamic_variables !== null
          ? Object.fromEntries(
              Object.entries(input.data.dynamic_variables as Record<string, unknown>).map(([k, v]) => [
                k,
                render(v, input.context),
              ]),
            )
          : {};
      const would = {
        to_number: to,
        agent_id: agentId,
        call_id: workflowCallId(input.stepId),
        dynamic_variables: variables,
      };
      if (to === null) return { skip: 'The lead has no phone number.', would };
      const agent = await findAgent(input.services.mongo.db, agentId);
      if (agent === null || agent.firm !== input.firm._id)
        return { skip: `No agent ${agentId} in this firm.`, would };
      return { would };
    },
    async perform({ services, firm, lead, would }) {
      const agent = (await findAgent(services.mongo.db, would.agent_id as string))!;
      const to = would.to_number as string;
      const callId = would.call_id as string;
      // The dial gate's request stage: an opted-out number (do-not-call), a country the firm may
      // not call… stops the step here, recorded in the gate's audit and in the step.
      const { decision } = await decideAtRequest(services, {
        firm,
        phone: to,
        leadTimeZone: lead?.timezone ?? null,
        callId,
        stage: 'request',
      });
      if (decision.answer === 'block') {
        return {
          state: 'skipped',
          result: { blocked: decision.reason, reason: decision.message, call_id: null },
        };
      }
      const variables = would.dynamic_variables as Record<string, string>;
      // A deferral (outside the callee's hours) is the dial stage's to wait out: the call is
      // created and its place-call job waits for the hours, as a campaign call does.
      const created = await registerOutboundCall(services, {
        firm,
        agent,
        toNumber: to,
        callId,
        dynamicVariables: variables,
        ...(lead?.timezone ? { leadTimeZone: lead.timezone } : {}),
      });
      return {
        state: 'done',
        result: {
          call_id: created.call_id,
          ...(decision.answer === 'defer' ? { deferred_until: new Date(decision.until).toISOString() } : {}),
        },
      };
    },
  },
  add_to_campaign: {
    effect: {},
    async preview(input) {
      const campaignId = render(input.data.campaign_id, input.context);
      const would = { campaign_id: campaignId, lead_id: input.lead?._id ?? null };
      if (input.lead === null) return { skip: 'The event is about no lead.', would };
      const campaign = await findCampaign(input.services.mongo.db, campaignId);
      if (campaign === null || campaign.firm !== input.firm._id)
        return { skip: `No campaign ${campaignId} in this firm.`, would };
      if (campaign.status !== 'draft')
        return { skip: `The campaign is ${campaign.status}: leads are added only to a draft.`, would };
      return { would };
    },
    async perform({ services, lead, would }) {
      const campaign = (await findCampaign(services.mongo.db, would.campaign_id as string))!;
      const added = await addCampaignLeads(services, campaign, { leadIds: [lead!._id] });
      return { state: 'done', result: { campaign_id: campaign._id, leads_added: added.leads_added } };
    },
  },
  update_lead: {
    effect: {},
    async preview(input) {
      const would: Result = { lead_id: input.lead?._id ?? null };
      if (typeof input.data.status === 'string') would.status = render(input.data.status, input.context);
      if (Array.isArray(input.data.tags))
        would.add_tags = input.data.tags.map((t) => render(t, input.context));
      return input.lead === null ? { skip: 'The event is about no lead.', would } : { would };
    },
    async perform({ services, lead, would, step, context, causedBy }) {
      // Under the lead's lock, the lead read again: another writer (a second workflow's step, a
      // booking event, a re-analysis) may have changed it since this step began, and the tags are
      // added to those it holds now, not to those read then (core/domain/leads/lead-lock.ts).
      return withLeadLock(services, lead!.firm, lead!._id, async () => {
        const current = (await leadsCollection(services.mongo.db).findOne({ _id: lead!._id })) ?? lead!;
        const workflowId = String(valueAt(context, 'workflow.id'));
        const chain = [...new Set([...(causedBy ?? []), workflowId])];
        return updateLead(services, current, would, step, chain);
      });
    },
  },
  webhook: {
    // The delivery is a claim on an id derived from the step: making it again makes nothing new.
    // Sending, retrying and logging it is the events-out deliveries' work (docs/events.md).
    effect: { isFinal: (err) => err instanceof NoSuchEndpoint },
    async preview(input) {
      const endpoint = await firmEndpoint(input.services, input.firm._id, input.data.endpoint_id);
      const body = {
        type: 'workflow.step',
        data: { event: input.context.event, lead: input.context.lead, workflow: input.context.workflow },
      };
      const would = { endpoint_id: input.data.endpoint_id, url: endpoint?.url ?? null, body };
      if (endpoint === null)
        return { skip: `No webhook endpoint ${String(input.data.endpoint_id)} of this firm.`, would };
      if (!endpoint.enabled) return { skip: `The webhook endpoint ${endpoint._id} is disabled.`, would };
      return { would };
    },
    async perform({ services, firm, lead, would, step }) {
      const endpoint = await firmEndpoint(services, firm._id, would.endpoint_id);
      if (endpoint === null) throw new NoSuchEndpoint(String(would.endpoint_id));
      const body = would.body as { data: Record<string, unknown> };
      const delivery = await sendWorkflowDelivery(services, endpoint, {
        webhookId: `msg_${stepDigest(step._id)}`,
        subject: lead?._id ?? step.run_id,
        at: step.created_at,
        data: body.data,
      });
      return {
        state: 'done',
        result: {
          endpoint_id: endpoint._id,
          delivery_id: publicDeliveryId(delivery._id),
          webhook_id: delivery.event_id,
        },
      };
    },
  },
};

/** The firm's endpoint of that id, or null (another firm's is none). */
async function firmEndpoint(
  services: Services,
  firm: string,
  id: unknown,
): Promise<WebhookEndpointDoc | null> {
  if (typeof id !== 'string' || id === '') return null;
  return (await firmEndpoints(services, firm)).find((e) => e._id === id) ?? null;
}

class NoSuchEndpoint extends Error {
  constructor(id: string) {
    super(`No webhook endpoint ${id} of this firm (it was deleted).`);
    this.name = 'NoSuchEndpoint';
  }
}

/**
 * update_lead's change of `current` (the lead as it is now, read under its lock); `chain`: the
 * workflows whose runs led to it, the step's own last.
 */
async function updateLead(
  services: Services,
  current: LeadDoc,
  would: Result,
  step: WorkflowStepDoc,
  chain: string[],
): Promise<EffectOutcome<Result>> {
  const set: Pick<LeadDoc, 'workflow_status' | 'tags'> = {};
  if (would.status !== undefined) set.workflow_status = would.status as string;
  if (would.add_tags !== undefined)
    set.tags = [...new Set([...(current.tags ?? []), ...(would.add_tags as string[])])];
  // lead.updated when a field really changes, recorded before the change and keyed by the step:
  // a step that dies between the two finds the change still to make and records the same event
  // (nothing new); one that dies after both finds nothing to change. It names the chain of
  // workflows that led to it, none of which starts on it: a graph that updates the lead it reacts
  // to cannot loop, nor can two that react to each other's changes.
  const changed = changedFields(current, set);
  if (changed.length > 0) {
    await recordLeadUpdated(services, { ...current, ...set }, changed, step.started_at ?? step.created_at, {
      key: `workflow|${step._id}`,
      workflows: chain,
    });
    await leadsCollection(services.mongo.db).updateOne({ _id: current._id }, { $set: set });
  }
  return { state: 'done', result: { lead_id: current._id, ...set, changed_fields: changed } };
}

/** A failure no retry can fix (the step is then `failed`). */
export function isFinalActionFailure(type: ActionType, err: unknown): boolean {
  return ACTIONS[type].effect.isFinal?.(err) ?? false;
}
