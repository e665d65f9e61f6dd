import type { Collection, Db, Document } from 'mongodb';

// Every collection the service uses, by name, so that indexes, tests and domain code agree.
export const COLLECTIONS = {
  firms: 'firms',
  /**
   * Key documents: a firm's data key (`_id` = the firm slug), wrapped with the master key
   * (SECRETS_KEY); it seals the firm's stored secrets (core/platform/secrets/data-keys.ts).
   */
  firmKeys: 'firm_keys',
  apiKeys: 'api_keys',
  /** Key documents: the API key for a key's SHA-256 (`_id` = the hash), read on every request. */
  apiKeyHashes: 'api_key_hashes',
  /** Publishable widget keys (`iwpk_…`) by id: the firm's key, allowed origins, default agent, challenge. */
  widgetKeys: 'widget_keys',
  /** Key documents: the widget key for a publishable key's SHA-256 (`_id` = the hash), read per session. */
  widgetKeyHashes: 'widget_key_hashes',
  /** Key documents: when a firm's session tokens were last revoked (`_id` = the firm slug). */
  sessionRevocations: 'session_revocations',
  agents: 'agents',
  /**
   * Key documents: an agent of a firm with a provider agent id (`<firm>|<provider agent id>`, possibly
   * stale: checked against the agent), and a firm's marker that its keys are complete (`*|<firm>`)
   * (core/domain/agents/agent-keys.ts).
   */
  agentKeys: 'agent_keys',
  calls: 'calls',
  /**
   * A call's effect records (`_id` = the call's): `effects.<name>` and the CRM's steps
   * `crm_sync.contact|matter`, kept apart so that no effect rewrites the call and its transcript
   * (core/platform/db/effect-recorder.ts, `records`).
   */
  callEffects: 'call_effects',
  /**
   * The lost-call sweep's place in each firm's ended calls (`_id` = the firm): the end time up to
   * which it has looked for lost analyses (core/domain/calls/lost-calls.ts).
   */
  lostCallSweeps: 'lost_call_sweeps',
  /**
   * The same sweep's place in each firm's ended chats (`_id` = the firm): the end time up to which
   * it has looked for chats whose effects' job was lost (core/domain/chats/lost-chats.ts).
   */
  lostChatSweeps: 'lost_chat_sweeps',
  chats: 'chats',
  /** Each chat's exchange log, one document per version (`<chat_id>:<version>`): see core/domain/chats.ts. */
  chatTurns: 'chat_turns',
  /**
   * An ended chat's effect records (`_id` = the chat's), as a call's are in call_effects: apart
   * from the chat, so no effect rewrites it (core/domain/chats/chat-effects.ts).
   */
  chatEffects: 'chat_effects',
  /** Key documents: our call id for a provider's call id (`provider|<firm>|<id>`). */
  callKeys: 'call_keys',
  idempotencyKeys: 'idempotency_keys',
  /** The simulator's own records of the calls it placed (its "provider database"). */
  simulatorCalls: 'simulator_calls',
  /** A firm's do-not-call list, one document per number (`_id` = `<firm>:<phone>`). */
  dncEntries: 'dnc_entries',
  /**
   * The dial gate's audit: one document per decision (`_id` = `<call_id>:<stage>`, a deferral
   * `<call_id>:<stage>:defer:<until>`), written before the dial (core/domain/compliance).
   */
  dialDecisions: 'dial_decisions',
  /** Leads: from the API, campaigns, and one per analysed call or chat (`_id` derived from it). */
  leads: 'leads',
  campaigns: 'campaigns',
  /** A campaign's members, one per lead (`<campaign>:<lead>`). */
  campaignLeads: 'campaign_leads',
  /** A campaign's phones (`<campaign>|<phone>`, one call each) and its launch claim (`launch:<campaign>`). */
  campaignClaims: 'campaign_claims',
  /**
   * A campaign's callable phones in the order they were added, a page per add (`<campaign>#<n>`):
   * the fan-out reads them by _id instead of scanning the phone claims.
   */
  campaignPhonePages: 'campaign_phone_pages',
  /** A campaign fan-out's checkpoint (`_id` = the campaign): where a restarted fan-out resumes. */
  campaignFanouts: 'campaign_fanouts',
  /**
   * The kill switch's pauses of a campaign (`<campaign>|pause|<n>`): why, and the records of the
   * notices sent about it (core/domain/campaigns/kill-switch.ts).
   */
  campaignPauses: 'campaign_pauses',
  /** Key documents: a firm's workflows by last update (`_id` = the firm slug), for the list. */
  workflowDirectories: 'workflow_directories',
  contacts: 'contacts',
  /** Key documents: the contact holding a phone or email in a firm (`<firm>|phone|<E.164>`, `<firm>|email|<address>`). */
  contactKeys: 'contact_keys',
  /** One document per contacts import (`_id` = its job_id): progress, then the result. */
  contactImports: 'contact_imports',
  /** A waiting import's rows as JSON text, in pieces (`<job_id>:<n>`), until its job has finished. */
  contactImportChunks: 'contact_import_chunks',
  /** One document per contacts sync from Clio (`_id` = its job_id): the next page, the counts so far. */
  contactSyncs: 'contact_syncs',
  /** Claims: the sync running for a firm (`<firm>|clio`), deleted when it ends: one at a time. */
  contactSyncClaims: 'contact_sync_claims',
  /** A firm's last completed sync (`<firm>|clio`): when it started, the next run's updated_since. */
  contactSyncMarks: 'contact_sync_marks',
  /** Claims: a contacts sync's completion (`_id` = the sync's id) with its time, the first completer's. */
  contactSyncCompletions: 'contact_sync_completions',
  contactSyncPages: 'contact_sync_pages',
  /** Key documents: the contact a source's record became (`<firm>|<source>|<external_id>`). */
  contactExternalKeys: 'contact_external_keys',
  /** A firm's RingCentral OAuth connection (`_id` = the firm), tokens sealed, and its webhook subscription. */
  ringcentralConnections: 'ringcentral_connections',
  /** Claims: a RingCentral connect state (`_id` = the state), single use, 10 minutes, with its PKCE verifier. */
  ringcentralOAuthStates: 'ringcentral_oauth_states',
  /** Key documents: a subscription's id → its firm (`_id` = the subscription id), for webhook deliveries. */
  ringcentralSubscriptions: 'ringcentral_subscriptions',
  /** Claims: a missed call seen (`_id` = `<firm>|<telephonySessionId>`): one callback decision per missed call. */
  missedCalls: 'missed_calls',
  /** Claims: a callback placed (`_id` = `<firm>|<caller>|<4 h window>`): at most one per caller per 4 hours. */
  missedCallCallbacks: 'missed_call_callbacks',
  /** Key documents: the last answered inbound call of a caller (`_id` = `<firm>|<caller>`). */
  inboundAnswers: 'inbound_answers',
  /** A firm's Clio OAuth connection (`_id` = the firm slug): tokens, expiry, region, status. */
  clioConnections: 'clio_connections',
  /** Claims: a pending Clio connect (`_id` = the OAuth state), deleted when the callback uses it. */
  clioOAuthStates: 'clio_oauth_states',
  /** A callback's Clio tokens awaiting the confirmation of the browser that started it (10 minutes). */
  clioOAuthConfirmations: 'clio_oauth_confirmations',
  /** Claims: the reconnect mail of a refused refresh (`<firm>|<refresh token id>`), sent once. */
  clioReconnectNotices: 'clio_reconnect_notices',
  /**
   * Key document (`_id` = "clio_client"): Clio refused the service's own OAuth client credentials
   * (invalid_client) and no grant has succeeded since; read by /metrics and /readyz.
   */
  clioClientAlerts: 'clio_client_alerts',
  /**
   * Claims: the one log line of a firm whose Retell custom functions do not say which call they
   * are from (`_id` = the firm slug; "Payload: args only" without `{{call_id}}`), logged once.
   */
  toolCallNotices: 'tool_call_notices',
  /**
   * Webhook deliveries kept while Redis was down (`_id`: time received, then a sequence), moved
   * into their queues in that order when it is back (core/domain/deliveries/delivery-outbox.ts).
   */
  webhookOutbox: 'webhook_outbox',
  /**
   * Claims: a delivery kept in the outbox (`_id` = its job id, `entry` its outbox entry), so a
   * repeat is kept once; deleted when the entry is moved (core/domain/deliveries/outbox-limits.ts).
   */
  webhookOutboxIds: 'webhook_outbox_ids',
  /**
   * The renewals of running effects' leases (`_id` = `<collection>|<subject id>|<path>`, written
   * only by the attempt holding it), kept apart from the subject so that renewing needs no lock
   * (core/platform/db/effect-recorder.ts).
   */
  effectLeases: 'effect_leases',
  /**
   * Key documents: a booking's event kept in the outbox and not yet applied (`_id` =
   * `<firm>|<booking uid>|<job id>`), so its reminders wait for it (core/domain/deliveries/outbox-bookings.ts).
   */
  webhookOutboxBookings: 'webhook_outbox_bookings',
  /** Bookings made through the booking provider (`_id` = our appointment id): request and its effect record. */
  appointments: 'appointments',
  /** Key documents: the appointment of a lead (`_id` = the lead id), copied onto the lead when it exists. */
  leadAppointments: 'lead_appointments',
  /** Key documents: the lead a booking is for (`_id` = `<firm>|<booking uid>`), so its events find it. */
  bookingLeads: 'booking_leads',
  /** Removals from a do-not-call list, kept for good: the entry as it was, who removed it, when, why. */
  dncRemovals: 'dnc_removals',
  /**
   * Domain events (`_id` derived from the change: firm, type, subject and the change's key), one
   * per real change, recorded by the step that made it (core/domain/events, docs/events.md).
   */
  events: 'events',
  /** A firm's webhook endpoints (`_id` = `whep_…`), at most 20 a firm; secrets sealed. */
  webhookEndpoints: 'webhook_endpoints',
  /**
   * One delivery of one event to one endpoint, with its attempts (`_id` =
   * `<endpoint>|<subject hash>|<occurred_at ms>|<event id>[|<replay>]`: a lane's deliveries sort as their events happened).
   */
  webhookDeliveries: 'webhook_deliveries',
  /** Claims: the mail telling a firm its endpoint was disabled (`<endpoint>|<disabled_at ms>`), with its record. */
  webhookNotices: 'webhook_notices',
  /**
   * The graphs a workflow ran with, one per activation or edit while active (`_id` =
   * `<workflow id>:v<n>`), never changed: a run reads the version it started with.
   */
  workflowVersions: 'workflow_versions',
  /**
   * Key documents: a firm's active workflows that an event type triggers (`_id` = `<firm>|<type>`,
   * the workflow ids with their active version), read by _id for every event.
   */
  workflowTriggers: 'workflow_triggers',
  /** Workflow runs (`_id` = `wfr_<firm>_<digest of version + event>`: the claim of one run per pair). */
  workflowRuns: 'workflow_runs',
  /** A run's steps (`_id` = `<run id>|<node id>|<visit>`), each with its effect record. */
  workflowSteps: 'workflow_steps',
  /** Key documents: the `wait_for` steps waiting on events about a lead (`_id` = `<firm>|<lead id>`). */
  workflowWaits: 'workflow_waits',
  /** Claims: how a `wait_for` step ended (`_id` = the step id): the event that came, or its timeout. */
  workflowWaitResolutions: 'workflow_wait_resolutions',
} as const;

export type CollectionName = (typeof COLLECTIONS)[keyof typeof COLLECTIONS];

export function collection<T extends Document>(db: Db, name: CollectionName): Collection<T> {
  return db.collection<T>(name);
}

/**
 * Collections kept one per firm, named `<base>.<firm slug>` (created by their first insert; no
 * index but _id): for large documents, so that no read of one firm's records ever goes through
 * another firm's. FerretDB scans a table for most filters (and for reads by _id too, without the GIN
 * index the local cluster adds), and a scan's cost grows with the bytes stored in it
 * (docs/operations.md#data-access-on-ferretdb-and-mongodb).
 */
export const FIRM_COLLECTIONS = {
  /** Flow-builder graphs, one document per workflow (nodes and edges kept as JSON text). */
  workflows: 'workflows',
} as const;

export function firmCollection<T extends Document>(
  db: Db,
  base: (typeof FIRM_COLLECTIONS)[keyof typeof FIRM_COLLECTIONS],
  firm: string,
): Collection<T> {
  return db.collection<T>(`${base}.${firm}`);
}
