import type { Services } from '../../wiring/services.js';
import { JOBS } from '../../../jobs/table.js';
import type { CallEventName, ProviderCallSnapshot } from '../../../jobs/calls.js';
import { ProviderError } from '../../integrations/voice/provider.js';
import { everyFirmSlug } from '../firms/firms.js';
import { callEffectsCollection, callsCollection, type CallDoc } from './calls.js';
import { callOutcome } from './call-outcome.js';
import { endGivenUpDial } from './call-dialing.js';
import { onCallFinished } from './call-finished.js';
import { CALL_EFFECTS, analysisDigest } from '../../../jobs/call-analysis.js';
import { enqueue, enqueueRun } from '../../../jobs/define.js';
import type { QueueName } from '../../../jobs/queues.js';
import { COLLECTIONS } from '../../platform/db/collections.js';
import { snapshotProviderCall } from './provider-call.js';
import { CARRYING, effectsSettled, sweepPlaces } from '../call-analysis/lost-effects.js';

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
//   never answered, may have asked again and had another. A never-dialled call whose job failed
//   for good without ending it (the job's last attempt could not write the end; a job that killed
//   its worker at every try, given up as stalled) is ended `dial_failed` as that attempt would
//   have ended it, unless a dial an attempt marked is found at the provider.
// - a lost end: a call at the provider (dialled, or an inbound call), its record unchanged for
//   LOST_END_AFTER_MS, the most recently changed first across firms. The provider is asked how
//   the call stands (VoiceProvider.getCall), and what it reports that the call's record lacks is
//   applied as the webhook would have brought it: its start, its end and its analysis, each as
//   the call event job of its usual id (an event still in the queue is not added twice).
// - a lost analysis: a call that ended (`ended`) more than LOST_END_AFTER_MS ago, whose analysis
//   never came (the provider is asked, as for a lost end) or whose conversation's effects are not
//   all settled while no job of its pipeline (its events, its analysis, its effects) waits or
//   runs: its analyze-call job is run again (every step of it is idempotent: what was done is
//   found done). Read by the list-calls index's range (`firm`, `finished`, `end_timestamp`) from
//   where the last pass got to (the firm's `lost_call_sweeps` document) less `analysisWindowMs`:
//   each ended call is looked at in the passes of that window, and a pass after a stretch with no
//   worker takes up where the last one stopped.

/** Job states asked of Redis in one go (pipelined by ioredis). */
const CHUNK = 200;
/** Questions to the provider in one pass at most; the rest wait for the next. */
const MAX_ASKS_PER_PASS = 200;

/** What the sweep reads of an unfinished call. */
type Seen = Pick<
  CallDoc,
  '_id' | 'firm' | 'direction' | 'status' | 'provider_call_id' | 'created_at' | 'updated_at'
>;

export interface LostCallsSweep {
  /** Calls looked at: unfinished ones, and ended ones in the analysis window. */
  checked: number;
  /** Lost dials whose place-call job was added again (or found added meanwhile). */
  readded: number;
  /** Undialled calls whose place-call job had failed for good without ending them: ended now. */
  dialsEnded: number;
  /** Calls the provider was asked about. */
  asked: number;
  /** Call events added from the provider's answers (or found in the queue meanwhile). */
  events: number;
  /** Ended calls whose analysis or effects stopped, their analyze-call job run again. */
  reanalysed: number;
}

const places = (services: Services) => sweepPlaces(services, COLLECTIONS.lostCallSweeps);

const PROVIDER_FINISHED = new Set(['ended', 'not_connected', 'error']);

/** One pass's running state: what it did, and how many questions the provider may still get. */
interface Pass {
  sweep: LostCallsSweep;
  named: string[];
  asksLeft: number;
  /** The provider said 429: it is asked nothing more in this pass. */
  providerBusy: boolean;
}

const mayAsk = (pass: Pass): boolean => !pass.providerBusy && pass.asksLeft > 0;

/**
 * One pass over every firm's calls: of its unfinished ones, lost dials older than `dialAfterMs`
 * and lost ends whose record is unchanged for `endAfterMs` (read by the list-calls index's prefix,
 * `firm` and `finished`: its calls in flight and waiting for their hours, not its history); with
 * `analysisWindowMs`, lost analyses of the calls that ended more than `endAfterMs` ago, from where
 * the last pass got to less that window.
 */
export async function sweepLostCalls(
  services: Services,
  ages: {
    dialAfterMs: number;
    endAfterMs: number;
    analysisWindowMs?: number;
    /** Questions to the provider in this pass at most (MAX_ASKS_PER_PASS). */
    maxAsks?: number;
  },
): Promise<LostCallsSweep> {
  const pass: Pass = {
    sweep: { checked: 0, readded: 0, dialsEnded: 0, asked: 0, events: 0, reanalysed: 0 },
    named: [],
    asksLeft: ages.maxAsks ?? MAX_ASKS_PER_PASS,
    providerBusy: false,
  };
  const now = Date.now();
  const dialCutoff = now - ages.dialAfterMs;
  const endCutoff = now - ages.endAfterMs;
  const stale: Seen[] = [];
  for await (const firm of everyFirmSlug(services.mongo.db)) {
    // Read whole before anything is asked of the provider: no cursor left open meanwhile.
    const unfinished = (await callsCollection(services.mongo.db)
      .find(
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
      )
      .toArray()) as Seen[];
    pass.sweep.checked += unfinished.length;
    const undialled = unfinished.filter(
      (c) => c.provider_call_id === null && c.direction === 'outbound' && c.created_at.getTime() < dialCutoff,
    );
    for (let i = 0; i < undialled.length; i += CHUNK) {
      await readdLostDials(services, undialled.slice(i, i + CHUNK), pass);
    }
    for (const call of unfinished) {
      if (call.provider_call_id !== null && call.updated_at.getTime() < endCutoff) stale.push(call);
    }
  }
  // Most recently changed first, whatever the firm: calls the provider never answers for (one it
  // has no record of is left as it is, and stays among the oldest), however many and in whichever
  // firms, cannot keep a call lost since from being asked about.
  stale.sort((a, b) => b.updated_at.getTime() - a.updated_at.getTime());
  for (const call of stale) {
    if (!mayAsk(pass)) break;
    await askProvider(services, call, pass);
  }
  if (ages.analysisWindowMs !== undefined) {
    for await (const firm of everyFirmSlug(services.mongo.db)) {
      await sweepLostAnalyses(services, firm, endCutoff, ages.analysisWindowMs, pass);
    }
  }
  const { sweep, named } = pass;
  if (sweep.readded > 0 || sweep.dialsEnded > 0 || sweep.events > 0 || sweep.reanalysed > 0) {
    services.log.warn({ ...sweep, calls: named }, 'lost calls: taken up');
  }
  return sweep;
}

/**
 * Adds a `lost` place-call job for each of these undialled calls that has no job of its id, and
 * ends each whose job failed for good.
 */
async function readdLostDials(services: Services, calls: Seen[], pass: Pass): Promise<void> {
  const queue = services.queues[JOBS.placeCall.queue];
  const ids = calls.map((c) => JOBS.placeCall.id!({ callId: c._id, firm: c.firm }));
  const states = await Promise.all(ids.map((id) => queue.getJobState(id)));
  for (const [i, call] of calls.entries()) {
    if (states[i] === 'failed') {
      await endLostGivenUpDial(services, ids[i]!, call._id, pass);
      continue;
    }
    if (states[i] !== 'unknown') continue;
    // An add while a job of that id exists (one added since) adds nothing.
    await enqueue(services.queues, JOBS.placeCall, { callId: call._id, firm: call.firm, lost: true });
    pass.sweep.readded += 1;
    if (pass.named.length < 20) pass.named.push(call._id);
  }
}

/**
 * A call whose place-call job failed for good while the call stayed unfinished: the job's last
 * attempt gives up by ending the call `dial_failed` (workers/processors/calls.ts), and this one's
 * end was never written (its store down at that moment, or no attempt ran to its end: a job given
 * up as stalled). A dial one of its attempts marked may have reached the provider before that
 * attempt died: the provider is asked for a call of ours first, as the next attempt would ask, and
 * a call it has is left as it is (a retry of the job from Bull Board finds it there and links it).
 * Otherwise that end now, with the job's reason, and what follows a finished call (its slot freed,
 * call.ended, its campaign lead settled): written under the call's lock only while the job is
 * still failed and no attempt marked the dial since (endGivenUpDial), and it leaves the dial
 * settled, so a retry taken up afterwards never dials.
 */
async function endLostGivenUpDial(
  services: Services,
  jobId: string,
  callId: string,
  pass: Pass,
): Promise<void> {
  const queue = services.queues[JOBS.placeCall.queue];
  // Its state is looked at again under the call's lock, before the end is written.
  const job = await queue.getJob(jobId);
  if (job === undefined) return;
  const db = services.mongo.db;
  const call = await callsCollection(db).findOne(
    { _id: callId },
    { projection: { _id: 1, firm: 1, dial: 1, finished: 1, provider_call_id: 1 } },
  );
  if (call === null || call.finished || call.provider_call_id !== null) return;
  if (call.dial.attempts > 0) {
    if (!mayAsk(pass)) return;
    const found = await askOnce(services, pass, call._id, () => services.voice.findCall(call._id, call.firm));
    if (found === undefined) return;
    if (found !== null) {
      services.log.warn(
        { call_id: call._id },
        'lost calls: a call whose place-call job failed for good is at the voice provider; retry its job to take it up',
      );
      return;
    }
  }
  const why = job.failedReason === '' ? 'no reason given' : job.failedReason;
  const stillFailed = async () => (await queue.getJobState(jobId)) === 'failed';
  if (!(await endGivenUpDial(services, call, why, stillFailed))) return;
  const ended = await callsCollection(db).findOne({ _id: callId });
  if (ended === null) return;
  await onCallFinished(services, ended);
  pass.sweep.dialsEnded += 1;
  if (pass.named.length < 20) pass.named.push(callId);
}

/**
 * One question to the provider about a call, counted against the pass: its answer, or undefined
 * when it could not answer (logged; a 429 ends the pass's questions).
 */
async function askOnce<T>(
  services: Services,
  pass: Pass,
  callId: string,
  question: () => Promise<T>,
): Promise<T | undefined> {
  pass.sweep.asked += 1;
  pass.asksLeft -= 1;
  try {
    return await question();
  } catch (err) {
    services.log.warn(
      { err, call_id: callId },
      'lost calls: the voice provider could not be asked about a call',
    );
    if (err instanceof ProviderError && err.kind === 'rate_limited') pass.providerBusy = true;
    return undefined;
  }
}

/**
 * Asks the provider how a call stands and adds the call events it reports that the record lacks,
 * each under the id the webhook's would have: one still waiting is left as it is, one finished
 * (a job that failed for good, kept a week) is added again (enqueueRun), since applying an event
 * twice changes nothing.
 */
async function askProvider(
  services: Services,
  call: Pick<CallDoc, '_id' | 'firm' | 'status' | 'provider_call_id'>,
  pass: Pass,
): Promise<void> {
  const found = await askOnce(services, pass, call._id, () => services.voice.getCall(call.provider_call_id!));
  if (found === undefined) return;
  if (found === null) {
    services.log.warn({ call_id: call._id }, 'lost calls: the voice provider has no such call');
    return;
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
    await enqueueRun(services.queues, JOBS.callEvent, {
      firm: call.firm,
      event,
      call: carried,
      received_at: Date.now(),
    });
    pass.sweep.events += 1;
  }
}

type Ended = Pick<
  CallDoc,
  '_id' | 'firm' | 'finished' | 'status' | 'disconnection_reason' | 'call_analysis' | 'provider_call_id'
> & { end_timestamp: number };

/**
 * The firm's calls that ended from where the last pass got to (less `windowMs`) up to `endCutoff`,
 * oldest first: one whose analysis never came is asked about at the provider; an analysed
 * conversation whose effects are not all settled, with no job of its pipeline waiting or running,
 * has its analyze-call job run again. Where the pass stops (the provider's questions used up, or
 * all looked at) is kept for the next.
 */
async function sweepLostAnalyses(
  services: Services,
  firm: string,
  endCutoff: number,
  windowMs: number,
  pass: Pass,
): Promise<void> {
  const db = services.mongo.db;
  const from = await places(services).from(firm, endCutoff, windowMs);
  const ended = (await callsCollection(db)
    .find(
      { firm, finished: true, end_timestamp: { $gte: from, $lt: endCutoff } },
      {
        projection: {
          _id: 1,
          firm: 1,
          finished: 1,
          status: 1,
          disconnection_reason: 1,
          call_analysis: 1,
          provider_call_id: 1,
          end_timestamp: 1,
        },
      },
    )
    .sort({ end_timestamp: 1 })
    .toArray()) as Ended[];
  let until = endCutoff;
  for (const call of ended) {
    if (call.status !== 'ended') continue;
    pass.sweep.checked += 1;
    if (call.call_analysis === null) {
      if (call.provider_call_id === null) continue;
      if (!mayAsk(pass)) {
        until = call.end_timestamp;
        break;
      }
      await askProvider(services, call, pass);
      continue;
    }
    const analysis = await lostAnalysis(services, call);
    if (analysis !== null) {
      // A finished analyze-call job of this id is removed and added again: its run is what is lost.
      await enqueueRun(services.queues, JOBS.analyzeCall, { firm: call.firm, callId: call._id, analysis });
      pass.sweep.reanalysed += 1;
    }
  }
  await places(services).keep(firm, until);
}

/** What an analysed call's analysis digest is made of, as stored (its transcript read alone). */
async function storedAnalysis(
  services: Services,
  call: Ended,
): Promise<Pick<ProviderCallSnapshot, 'call_analysis' | 'transcript'>> {
  const stored = await callsCollection(services.mongo.db).findOne(
    { _id: call._id },
    { projection: { transcript: 1 } },
  );
  return {
    call_analysis: call.call_analysis as ProviderCallSnapshot['call_analysis'],
    ...(stored?.transcript == null ? {} : { transcript: stored.transcript }),
  };
}

/**
 * The analysis digest of an analysed conversation whose effects are not all settled (`pending`,
 * `running`, or none yet) while no job of its pipeline waits or runs: its call_ended and
 * call_analyzed events, its analyze-call job, its effects' jobs. Null when nothing is lost.
 */
async function lostAnalysis(services: Services, call: Ended): Promise<string | null> {
  if (callOutcome(call) !== 'conversation') return null;
  const records = await callEffectsCollection(services.mongo.db).findOne(
    { _id: call._id },
    { projection: { effects: 1 } },
  );
  if (effectsSettled(records?.effects)) return null;
  const source = await storedAnalysis(services, call);
  const analysis = analysisDigest(source);
  const ids: Array<readonly [QueueName, string]> = [
    [JOBS.analyzeCall.queue, JOBS.analyzeCall.id!({ firm: call.firm, callId: call._id, analysis })],
    ...CALL_EFFECTS.map(
      (effect) =>
        [JOBS.callEffect.queue, JOBS.callEffect.id!({ firm: call.firm, callId: call._id, effect })] as const,
    ),
  ];
  if (call.provider_call_id !== null) {
    // The webhook's events, by the provider's call id (a call_analyzed's id carries its digest).
    for (const event of ['call_ended', 'call_analyzed'] as const) {
      const snapshot = { call_id: call.provider_call_id, ...source };
      const job = { firm: call.firm, event, call: snapshot, received_at: 0 };
      ids.push([JOBS.callEvent.queue, JOBS.callEvent.id!(job)]);
    }
  }
  const states = await Promise.all(ids.map(([queue, id]) => services.queues[queue].getJobState(id)));
  return states.some((state) => CARRYING.has(state)) ? null : analysis;
}
