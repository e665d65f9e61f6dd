// What the chaos run sent and what the service acknowledged: the checks at the end hold the
// service to every 200 it answered, and to every fault it was put through.
import { KNOWN_OUTCOME_RETRY_MS } from '../../core/platform/db/effect-record-writes.js';

export type FaultWindow = 'redis' | 'mongodb' | null;

/** Every HTTP answer the driver got (probes included). */
export interface Answer {
  route: string;
  status: number;
  retryAfter: string | null;
  at: number;
  /** The outage under way when it was answered, if any. */
  during: FaultWindow;
}

export interface DirectCall {
  kind: 'workload' | 'probe';
  idempotencyKey: string;
  toNumber: string;
  fullName: string;
  /** The final answer (after retries): 200 with the call id, or what the service last said. */
  status: number;
  callId?: string;
  /** Answers 200 with call ids (one Idempotency-Key: the same id each time). */
  okCallIds: string[];
}

export interface CampaignRecord {
  id: string;
  firm: string;
  leads: number;
  phones: Map<string, 'answered' | 'no_answer' | 'error'>;
  launchStatus?: number;
  callsQueued?: number;
}

export interface ImportRecord {
  rows: number;
  expected: { imported: number; duplicates: number; errors: number };
  /** E.164 phones and lower-case emails the firm should hold afterwards, one contact each. */
  phones: string[];
  emails: string[];
  status?: number;
  result?: { imported: number; duplicates: number; errors: number };
}

export type BookingTrigger = 'BOOKING_CREATED' | 'BOOKING_RESCHEDULED' | 'BOOKING_CANCELLED';

export interface BookingEventRecord {
  trigger: BookingTrigger;
  uid: string;
  rescheduleUid?: string;
  startMs: number;
  /** When the first attempt was sent and when the acknowledging answer came. */
  sentAt: number;
  ackAt?: number;
  status?: number;
}

/** One booking uid's story as the run sent it: what reminders it should end with. */
export interface BookingModel {
  uid: string;
  startMs: number;
  attendee: string;
  createdAck?: { sentAt: number; ackAt: number };
  /** Acknowledged cancel (or reschedule away from this uid). */
  cancelAck?: number;
  cancelledBy?: 'BOOKING_CANCELLED' | 'BOOKING_RESCHEDULED';
}

export interface WebhookCopy {
  callId: string;
  providerCallId: string;
  firm: string;
  status: number;
  at: number;
}

export interface ProbeRecord {
  fault: 'redis' | 'mongodb';
  target: 'readyz' | 'create-outbound-call' | 'booking-webhook' | 'call-webhook';
  status: number;
  retryAfter: string | null;
  at: number;
}

/** A Retell call (call_started, then call_ended) sent during an outage, straight to the web process. */
export interface RetellProbe {
  firm: string;
  providerCallId: string;
  started: number;
  ended: number;
  at: number;
}

export interface FaultRecord {
  kind: string;
  at: number;
  durationMs: number;
  detail: string;
  ok: boolean;
}

export class Ledger {
  readonly answers: Answer[] = [];
  readonly directCalls: DirectCall[] = [];
  campaign: CampaignRecord | undefined;
  readonly imports: ImportRecord[] = [];
  readonly bookingEvents: BookingEventRecord[] = [];
  readonly bookings = new Map<string, BookingModel>();
  /** Our second copies of call_analyzed, sent straight to the web process. */
  readonly copies: WebhookCopy[] = [];
  readonly probes: ProbeRecord[] = [];
  readonly retellProbes: RetellProbe[] = [];
  readonly faults: FaultRecord[] = [];
  /** The outage under way, as the fault injector announces it. */
  window: FaultWindow = null;
  redisMemory: { start?: number; peak: number; end?: number; max?: number } = { peak: 0 };
  /** The availability flood: each answer's status, and the flood firm's slot cache right after. */
  availabilityFlood: { statuses: number[]; cacheKeys: number; cacheBytes: number } | undefined;
  /** SIGTERM results: how long the worker took and what it handed back. */
  readonly sigterms: Array<{
    afterMs: number;
    exitCode: number | null;
    activeAtSignal: number;
    handedBack: number;
  }> = [];
  readonly kills: Array<{ worker: number; activeAtKill: number; at: number }> = [];
  /** The process ids of the workers killed (SIGKILL): the record locks they held expire by themselves. */
  readonly killedPids: number[] = [];
  /** When a worker process ended abruptly (SIGKILL) or handed jobs back (SIGTERM). */
  readonly abruptEnds: number[] = [];
  /** The MongoDB outages: from the stop until the service was ready again. */
  readonly mongoOutages: Array<{ from: number; to: number }> = [];

  /**
   * Whether a repeated send (a mail, a Slack message: outcomes that cannot be asked about) is
   * explained by a worker that ended abruptly between the send and its record: within 5 s after
   * the send, or, for a send made during a MongoDB outage (or just before it), within the time
   * the effect recorder keeps retrying a known outcome into its record, KNOWN_OUTCOME_RETRY_MS
   * (until MongoDB answers, the outcome lives only in that process).
   */
  explainsRepeat(sent: number, repeated: number): boolean {
    const inOutage = this.mongoOutages.some((o) => sent >= o.from - 5000 && sent <= o.to);
    const recordBy = sent + (inOutage ? KNOWN_OUTCOME_RETRY_MS : 5000);
    return this.abruptEnds.some((k) => k >= sent - 1000 && k <= recordBy && k < repeated);
  }

  answer(route: string, status: number, retryAfter: string | null): void {
    this.answers.push({ route, status, retryAfter, at: Date.now(), during: this.window });
  }
}
