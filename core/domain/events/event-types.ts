/** The events the service sends out and runs workflows on (docs/events.md). */
export const EVENT_TYPES = [
  'call.started',
  'call.ended',
  'call.analyzed',
  'lead.created',
  'lead.updated',
  'appointment.booked',
  'appointment.requested',
  'appointment.rescheduled',
  'appointment.cancelled',
  'appointment.rejected',
  'campaign.launched',
  'campaign.paused',
  'campaign.completed',
  'contacts.import.completed',
  'contacts.sync.completed',
  'dnc.added',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** One domain event, as stored in the `events` collection. */
export interface DomainEvent {
  /** `evt_` + 26 chars of lowercase base32 (or hex) of sha256(`${firm}|${type}|${subject}|${key}`): a retried job records it once. */
  _id: string;
  /** The firm's slug (the same `firm` field every other document carries). */
  firm: string;
  type: EventType;
  /** The record the event is about, by its public id: `call_…`, `lead_…`, the campaign's id, the import's job id, … */
  subject: string;
  /** When the change happened (the change's own time, not the insert's). */
  occurred_at: Date;
  /**
   * When the service recorded it (absent on events recorded before it was kept): the ordering
   * bound counts from here, not from `occurred_at`, which a provider may report late.
   */
  recorded_at?: Date;
  /** The public shape of the record as the API's presenters return it, as JSON text (provider data may hold keys MongoDB will not store). Never secrets. */
  data_json: string;
  /**
   * The workflows whose runs led to this change, in order, the last one's step having made it:
   * none of them starts a run on it (no workflow loops, through itself or through others).
   */
  caused_by_workflows?: string[];
  /** The one workflow whose step made the change, on events recorded before the chain was kept. */
  caused_by_workflow?: string;
}

/** The workflows whose runs led to an event (an older event names only the last one). */
export function causedByWorkflows(event: Pick<DomainEvent, 'caused_by_workflows' | 'caused_by_workflow'>): string[] {
  if (event.caused_by_workflows !== undefined) return event.caused_by_workflows;
  return event.caused_by_workflow === undefined ? [] : [event.caused_by_workflow];
}

export interface EventInput {
  firm: string;
  type: EventType;
  subject: string;
  /** What identifies this change among the subject's changes of this type (e.g. the provider's event id, the lead's update version). */
  key: string;
  occurred_at: Date;
  data: Record<string, unknown>;
  /** See DomainEvent.caused_by_workflows. */
  caused_by_workflows?: string[];
}
