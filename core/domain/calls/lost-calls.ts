import type { Services } from '../../wiring/services.js';
import type { RedisClient } from '../../platform/redis.js';
import { JOBS } from '../../../jobs/table.js';
import type { CallEventName } from '../../../jobs/calls.js';
import { ProviderError } from '../../integrations/voice/provider.js';
import { everyFirmSlug } from '../firms/firms.js';
import { callEffectsCollection, callsCollection, type CallDoc } from './calls.js';
import { callOutcome } from './call-outcome.js';
import { CALL_EFFECTS, analysisDigest } from '../../../jobs/call-analysis.js';
import { enqueue, enqueueRun } from '../../../jobs/define.js';
import { snapshotProviderCall } from './provider-call.js';

// Lost calls (docs/calls.md#lost-calls): calls the pipeline stopped carrying. Redis
// replicates asynchronously, so a failover can lose jobs the service had added and answered for
// (docs/redis.md#what-a-failover-can-lose), and a process that dies between a record's write and
// its job's add leaves the record without its job. Left alone, such a call stays `registered` or
// `ongoing` for ever, its dial slot held until its lease runs out and its intake never taken.
// The sweep, every LOST_CALL_SWEEP_MS, looks at each firm's unfinished calls:
//
// - a lost dial: never dialled, older than LOST_DIAL_AFTER_MS, and no place-call job of its id in
//   the calls queue (in any state). Its job is added again, marked `lost`, and decides on the call
//   as it stands then (placeOutboundCall): a call its request names again on a repeat
//   (`repeatable`: a derived id, an Idempotency-Key) is placed, since a repeat cannot have made a
//   second; any other that never came to its dial is ended `error`/`dial_failed`, since its client,
//   never answered, may have asked again and had another.
// - a lost end: a call at the provider (dialled, or an inbound call), its record unchanged for
//   LOST_END_AFTER_MS. The provider is asked how the call stands (VoiceProvider.getCall), and
//   what it reports that the call's record lacks is applied as the webhook would have brought it:
//   its start, its end and its analysis, each as the call event job of its usual id (an event
//   still in the queue is not added twice).
// - a lost analysis: a call that ended (`ended`) between LOST_END_AFTER_MS and that plus
//   `analysisWindowMs` ago, whose analysis never came (the provider is asked, as for a lost end)
//   or whose conversation's effects are not all settled while no job of its pipeline waits or
//   runs: its analyze-call job is run again (every step of it is idempotent: what was done is
//   found done). The window is read by the list-calls index's range (`firm`, `finished`,
//   `end_timestamp`), so each call is looked at in a few passes, not in every pass for ever.

/** Ids asked of Redis in one go (one round trip of EXISTS, pipelined by ioredis). */
const CHUNK = 200;

/** What the sweep reads of a call. */
type Seen = Pick<
  CallDoc,
  '_id' | 'firm' | 'direction' | 'status' | 'provider_call_id' | 'created_at' | 'updated_at'
>;

export interface LostCallsSweep {
  /** Calls looked at: unfinished ones, and ended ones in the analysis window. */
  checked: number;
  /** Lost dials whose place-call job was added again. */
  readded: number;
  /** Dialled calls the provider was asked about. */
  asked: number;
  /** Call events added from the provider's answers. */
  events: number;
  /** Ended calls whose analysis or effects stopped, their analyze-call job run again. */
  reanalysed: number;
}

const PROVIDER_FINISHED = new Set(['ended', 'not_connected', 'error']);

/**
 * One pass over every firm's calls: of its unfinished ones, lost dials older than `dialAfterMs`
 * and lost ends whose record is unchanged for `endAfterMs` (read by the list-calls index's prefix,
 * `firm` and `finished`: its calls in flight and waiting for their hours, not its history); with
 * `analysisWindowMs`, lost analyses of the calls that ended in that window before `endAfterMs` ago.
 */
export async function sweepLostCalls(
  services: Services,
  ages: { dialAfterMs: number; endAfterMs: number; analysisWindowMs?: number },
): Promise<LostCallsSweep> {
  const sweep: LostCallsSweep = { checked: 0, readded: 0, asked: 0, events: 0, reanalysed: 0 };
  const now = Date.now();
  const dialCutoff = now - ages.dialAfterMs;
  const endCutoff = now - ages.endAfterMs;
  const named: string[] = [];
  // A provider saying 429 is asked nothing more this pass.
  let providerBusy = false;
  for await (const firm of everyFirmSlug(services.mongo.db)) {
    const cursor = callsCollection(services.mongo.db).find(
      { firm, finished: false },
      {
        projection: {
          _id: 1,
          firm: 1,
          direction: 1,
          status: 1,
          provider_call_id: 1,
          created_at: 1,
          updated_at: 1,
        },
      },
    );
    let undialled: Seen[] = [];
    for await (const call of cursor as AsyncIterable<Seen>) {
      sweep.checked += 1;
      if (call.provider_call_id === null) {
        if (call.direction !== 'outbound' || call.created_at.getTime() >= dialCutoff) continue;
        undialled.push(call);
        if (undialled.length === CHUNK) {
          await readdLostDials(services, undialled, sweep, named);
          undialled = [];
        }
      } else if (!providerBusy && call.updated_at.getTime() < endCutoff) {
        providerBusy = await askProvider(services, call, sweep);
      }
    }
    if (undialled.length > 0) await readdLostDials(services, undialled, sweep, named);
    if (ages.analysisWindowMs !== undefined && !providerBusy) {
      providerBusy = await sweepLostAnalyses(services, firm, endCutoff, ages.analysisWindowMs, sweep);
    }
  }
  if (sweep.readded > 0 || sweep.events > 0 || sweep.reanalysed > 0) {
    services.log.warn({ ...sweep, calls: named }, 'lost calls: jobs added again');
  }
  return sweep;
}

/** Adds a `lost` place-call job for each of these undialled calls that has no job of its id. */
async function readdLostDials(
  services: Services,
  calls: Seen[],
  sweep: LostCallsSweep,
  named: string[],
): Promise<void> {
  const queue = services.queues[JOBS.placeCall.queue];
  // The queue's own connection: its keys are where it keeps them (prefix, a cluster's slots).
  const redis = queue.opts.connection as RedisClient;
  const present = await Promise.all(
    calls.map((c) => redis.exists(queue.toKey(JOBS.placeCall.id!({ callId: c._id, firm: c.firm })))),
  );
  for (const [i, call] of calls.entries()) {
    if (present[i] !== 0) continue;
    // An add while a job of that id exists (one added since) adds nothing.
    await enqueue(services.queues, JOBS.placeCall, { callId: call._id, firm: call.firm, lost: true });
    sweep.readded += 1;
    if (named.length < 20) named.push(call._id);
  }
}

/**
 * Asks the provider how a dialled call stands and adds the call events it reports that the record
 * lacks. True when the provider is rate limiting (the pass asks it nothing more).
 */
async function askProvider(
  services: Services,
  call: Pick<CallDoc, '_id' | 'firm' | 'status' | 'provider_call_id'>,
  sweep: LostCallsSweep,
): Promise<boolean> {
  sweep.asked += 1;
  let found;
  try {
    found = await services.voice.getCall(call.provider_call_id!);
  } catch (err) {
    services.log.warn(
      { err, call_id: call._id },
      'lost calls: the voice provider could not say how a call stands',
    );
    return err instanceof ProviderError && err.kind === 'rate_limited';
  }
  if (found === null) {
    services.log.warn({ call_id: call._id }, 'lost calls: the voice provider has no such call');
    return false;
  }
  const snapshot = snapshotProviderCall(found);
  const status = snapshot.call_status ?? '';
  const events: CallEventName[] = [];
  if (status === 'ongoing' && call.status === 'registered') events.push('call_started');
  if (PROVIDER_FINISHED.has(status)) {
    // An ended call asked about lacks only its analysis.
    if (call.status !== 'ended') events.push('call_ended');
    if (snapshot.call_analysis !== undefined) events.push('call_analyzed');
  }
  for (const event of events) {
    // As Retell sends them: the analysis only on call_analyzed.
    const { call_analysis: analysis, ...rest } = snapshot;
    const carried = event === 'call_analyzed' ? { ...rest, call_analysis: analysis } : rest;
    await enqueue(services.queues, JOBS.callEvent, {
      firm: call.firm,
      event,
      call: carried,
      received_at: Date.now(),
    });
    sweep.events += 1;
  }
  return false;
}

/** The pipeline's jobs that carry a call while they wait or run (a finished job carries nothing). */
const CARRYING = new Set(['waiting', 'delayed', 'active', 'prioritized', 'waiting-children']);

type Ended = Pick<CallDoc, '_id' | 'firm' | 'finished' | 'status' | 'disconnection_reason' | 'call_analysis'>;

/**
 * The firm's calls that ended in [endCutoff - windowMs, endCutoff): one whose analysis never came
 * is asked about at the provider; an analysed conversation whose effects are not all settled,
 * with no job of its pipeline waiting or running, has its analyze-call job run again. True when
 * the provider is rate limiting.
 */
async function sweepLostAnalyses(
  services: Services,
  firm: string,
  endCutoff: number,
  windowMs: number,
  sweep: LostCallsSweep,
): Promise<boolean> {
  const db = services.mongo.db;
  const cursor = callsCollection(db).find(
    { firm, finished: true, end_timestamp: { $gte: endCutoff - windowMs, $lt: endCutoff } },
    {
      projection: {
        _id: 1,
        firm: 1,
        finished: 1,
        status: 1,
        disconnection_reason: 1,
        call_analysis: 1,
        provider_call_id: 1,
      },
    },
  );
  for await (const call of cursor as AsyncIterable<Ended & Pick<CallDoc, 'provider_call_id'>>) {
    if (call.status !== 'ended') continue;
    sweep.checked += 1;
    if (call.call_analysis === null) {
      if (call.provider_call_id === null) continue;
      const busy = await askProvider(services, call, sweep);
      if (busy) return true;
      continue;
    }
    if (callOutcome(call) !== 'conversation') continue;
    const records = await callEffectsCollection(db).findOne(
      { _id: call._id },
      { projection: { effects: 1 } },
    );
    const settled = CALL_EFFECTS.every((name) => {
      const state = records?.effects?.[name]?.state;
      return state !== undefined && state !== 'pending' && state !== 'running';
    });
    if (settled) continue;
    const full = await callsCollection(db).findOne(
      { _id: call._id },
      { projection: { call_analysis: 1, transcript: 1 } },
    );
    if (full === null) continue;
    const analyze = { firm: call.firm, callId: call._id, analysis: analysisDigest(full) };
    const ids = [
      [JOBS.analyzeCall.queue, JOBS.analyzeCall.id!(analyze)] as const,
      ...CALL_EFFECTS.map(
        (effect) =>
          [
            JOBS.callEffect.queue,
            JOBS.callEffect.id!({ firm: call.firm, callId: call._id, effect }),
          ] as const,
      ),
    ];
    const states = await Promise.all(ids.map(([queue, id]) => services.queues[queue].getJobState(id)));
    if (states.some((state) => CARRYING.has(state))) continue;
    // A finished analyze-call job of this id is removed and added again: its run is what is lost.
    await enqueueRun(services.queues, JOBS.analyzeCall, analyze);
    sweep.reanalysed += 1;
  }
  return false;
}
