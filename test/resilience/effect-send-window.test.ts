// What a mail or a Slack post that cannot be asked about afterwards is left with (the effect
// recorder, docs/workflows.md#exactly-once-measured): its answer is stored the moment it is read,
// before the record and its lock; an attempt that finds the effect `running` records that answer
// instead of sending again; a send holds its lease for as long as it may be out, whatever becomes
// of the renewals, and is abandoned at that bound — the mailer and the Slack post honour it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import {
  EffectBoundError,
  EffectBusyError,
  type EffectLeaseDoc,
  type EffectSubject,
  type EffectSubjectDoc,
} from '../../core/platform/db/effect-records.js';
import { SmtpMailer } from '../../core/integrations/mail/mailer.js';
import { TeamChatError, postToSlack } from '../../core/integrations/team-chat/slack.js';
import { startFakeSmtp, type FakeSmtp } from '../fakes/smtp-server.js';
import { startFakeSlack, type FakeSlack } from '../fakes/slack-server.js';
import { eventually } from '../helpers/eventually.js';
import { freshMongoUri, rand } from '../helpers/stack.js';

const LEASE_MS = 3000;

let mongo: Mongo;
let smtp: FakeSmtp;
let slack: FakeSlack;

beforeAll(async () => {
  mongo = createMongo(freshMongoUri());
  [smtp, slack] = await Promise.all([startFakeSmtp(), startFakeSlack()]);
});
afterAll(async () => {
  await mongo?.db.dropDatabase().catch(() => {});
  await mongo?.close().catch(() => {});
  await Promise.all([smtp?.stop(), slack?.close()]);
});

const leases = () => mongo.db.collection<EffectLeaseDoc>('effect_leases');
const subjects = () => mongo.db.collection<EffectSubjectDoc>('effect_subjects');

/** A subject with a lease; `exclusive` as given (a worker's record writes). */
function subjectOf(id: string, exclusive: EffectSubject['exclusive'] = (write) => write()): EffectSubject {
  return {
    collection: subjects(),
    id,
    exclusive,
    lease: { collection: leases(), ms: LEASE_MS, clockMarginMs: 0 },
  };
}

interface Stored {
  effect: { state: string; attempts: number; result: unknown; started_at: Date; lease_until: Date | null };
}
const stored = async (id: string) => (await subjects().findOne({ _id: id })) as unknown as Stored;

describe('an effect that cannot be asked about afterwards', () => {
  it('has its answer stored before its record: an attempt finding it running records that answer and sends nothing', async () => {
    const id = `mail_${rand()}`;
    await subjects().insertOne({ _id: id });
    // Worker A gets the server's answer, then stalls before its record is written (its lock
    // never comes): as a worker killed there would, it leaves the effect `running`.
    let answered = false;
    let unfreeze!: () => void;
    const frozen = new Promise<void>((resolve) => (unfreeze = resolve));
    const subjectA = subjectOf(id, (write) => (answered ? frozen.then(() => write()) : write()));
    let sends = 0;
    const a = runEffect(subjectA, { path: 'effect' }, { lastAttempt: false }, async () => {
      sends++;
      answered = true;
      return { state: 'done', result: { message_id: '<a@test>' } };
    });
    await eventually(async () => {
      expect(await leases().countDocuments({ outcome: { $exists: true } })).toBe(1);
    });
    expect((await stored(id)).effect.state).toBe('running');

    // Worker B takes the job over: it records A's answer rather than mailing again — at once,
    // although A's lease is live.
    const b = await runEffect(subjectOf(id), { path: 'effect' }, { lastAttempt: false }, async () => {
      sends++;
      return { state: 'done', result: { message_id: '<b@test>' } };
    });
    expect(b).toMatchObject({ state: 'done', attempts: 1, result: { message_id: '<a@test>' } });
    expect((await stored(id)).effect).toMatchObject({
      state: 'done',
      attempts: 1,
      result: { message_id: '<a@test>' },
      lease_until: null,
    });
    expect(sends).toBe(1);

    unfreeze();
    expect(await a).toMatchObject({ state: 'done', result: { message_id: '<a@test>' } });
    // The answer's document goes once the record holds it.
    await eventually(async () => {
      expect(await leases().countDocuments({ outcome: { $exists: true } })).toBe(0);
    });
  });

  it('holds its lease for its whole bound while the send is out, and is abandoned at the bound', async () => {
    const id = `slack_${rand()}`;
    await subjects().insertOne({ _id: id });
    const BOUND_MS = 60_000;
    let release!: () => void;
    const out = new Promise<void>((resolve) => (release = resolve));
    const a = runEffect(subjectOf(id), { path: 'effect', boundMs: BOUND_MS }, { lastAttempt: false }, () =>
      out.then(() => ({ state: 'done' as const, result: { channel: 'slack' } })),
    );
    await eventually(async () => expect((await stored(id))?.effect?.state).toBe('running'));
    const marked = (await stored(id)).effect;
    // The mark's lease covers the bound: no renewal is needed while the request is out.
    const leaseEnd = new Date(marked.lease_until!).getTime();
    expect(leaseEnd - new Date(marked.started_at).getTime()).toBeGreaterThanOrEqual(BOUND_MS + LEASE_MS);
    const busy = await runEffect(subjectOf(id), { path: 'effect' }, { lastAttempt: false }, async () => {
      throw new Error('must not be sent again');
    }).catch((err: unknown) => err);
    expect(busy).toBeInstanceOf(EffectBusyError);
    expect((busy as EffectBusyError).until).toBeGreaterThanOrEqual(leaseEnd);
    release();
    expect((await a).state).toBe('done');

    // Past its bound, `perform` is aborted: the attempt ends, the effect left `running` (it may
    // have gone out) with its lease ended, for the next attempt.
    const late = `mail_${rand()}`;
    await subjects().insertOne({ _id: late });
    const abandoned = await runEffect(
      subjectOf(late),
      { path: 'effect', boundMs: 50 },
      { lastAttempt: false },
      (signal) =>
        new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason as Error)),
        ),
    ).catch((err: unknown) => err);
    expect(abandoned).toBeInstanceOf(EffectBoundError);
    expect((await stored(late)).effect).toMatchObject({ state: 'running', attempts: 1, lease_until: null });
  });

  it('the mailer is abandoned when its bound is reached', async () => {
    // A server that has the message and does not answer: the mailer gives up on the signal,
    // not on its 20 s socket timeout.
    const mailer = new SmtpMailer(smtp.url, 'Intake <no-reply@intake.test>');
    const release = smtp.hold();
    const abort = new AbortController();
    const sending = mailer
      .send({ to: ['team@firm.test'], subject: 'S', text: 'T', signal: abort.signal })
      .catch((err: unknown) => err);
    await eventually(async () => expect(smtp.held()).toBe(1), 15_000, 20);
    abort.abort(new Error('bound reached'));
    expect(await sending).toMatchObject({ code: 'EABORT' });
    release();
    mailer.close();
  });

  it('a Slack post is abandoned when its bound is reached', async () => {
    const url = slack.webhookUrl();
    const policy = { allowHttpAndLoopback: true };
    // Aborted already: nothing is sent, and the error says so.
    const before = await postToSlack(url, { text: 'x' }, { policy, signal: AbortSignal.abort() }).catch(
      (err: unknown) => err,
    );
    expect(before).toBeInstanceOf(TeamChatError);
    expect((before as TeamChatError).mayHaveBeenSent).toBe(false);
    // Aborted while Slack holds its answer: the request is dropped, and it may have been posted.
    slack.hold();
    const during = new AbortController();
    const posting = postToSlack(url, { text: 'y' }, { policy, signal: during.signal }).catch(
      (err: unknown) => err,
    );
    await eventually(async () => expect(slack.held()).toBe(1), 15_000, 20);
    during.abort(new Error('bound reached'));
    const err = await posting;
    slack.release();
    expect(err).toBeInstanceOf(TeamChatError);
    expect((err as TeamChatError).mayHaveBeenSent).toBe(true);
    expect(slack.attempts.filter((a) => a.body?.text === 'x')).toHaveLength(0);
  });
});

describe('an effect whose error holds the NUL character (an answer from a firm-chosen server)', () => {
  it('is recorded with U+FFFD in its place: a last attempt ends failed, not left running', async () => {
    const id = `clio_${rand()}`;
    await subjects().insertOne({ _id: id });
    const failing = runEffect(subjectOf(id), { path: 'effect' }, { lastAttempt: true }, () =>
      Promise.reject(new Error('Clio answered 500 (bad\u0000byte).')),
    );
    await expect(failing).rejects.toThrow(/Clio answered 500/);
    const record = (await subjects().findOne({ _id: id })) as unknown as {
      effect: { state: string; last_error: string };
    };
    expect(record.effect.state).toBe('failed');
    expect(record.effect.last_error).toBe('Clio answered 500 (bad\uFFFDbyte).');
  });
});
