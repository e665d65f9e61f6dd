// Found by the chaos run: an effect that cannot be asked about afterwards (a mail, a Slack
// message) was sent twice when MongoDB went away between the send and its record. The outcome
// was known to the worker, but the failed record write left the effect `running`, so the next
// attempt repeated it. The recorder now retries a known outcome into its record through a short
// outage. A FerretDB (on PostgreSQL) of this file's own is stopped and started again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createMongo, type Mongo } from '../../core/platform/db/mongo.js';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import type { EffectSubject } from '../../core/platform/db/effect-records.js';
import { startLocalServices, type LocalServices } from '../../scripts/local/services.js';

let local: LocalServices;
let mongo: Mongo;

beforeAll(async () => {
  // Only FerretDB and PostgreSQL are started: the run's Redis is given.
  local = await startLocalServices({ redisUrl: inject('redisUrl') }, () => {});
  mongo = createMongo(local.mongodbUri);
});
afterAll(async () => {
  await mongo?.close().catch(() => {});
  await local?.stop();
});

describe('an effect whose outcome is known', () => {
  it('is recorded done across a MongoDB outage that starts right after it happened, and never repeated', async () => {
    const subjects = mongo.db.collection<{ _id: string }>('effect_subjects');
    await subjects.insertOne({ _id: 'call_outage' });
    const subject: EffectSubject = {
      collection: subjects as unknown as EffectSubject['collection'],
      id: 'call_outage',
      exclusive: (write) => write(),
    };
    const effect = { path: 'effects.email' };
    let sent = 0;
    let restarted: Promise<void> | undefined;
    const record = await runEffect(subject, effect, { lastAttempt: false }, async () => {
      sent++;
      // The mail went out; the database goes away before the worker records it.
      await local.ferretdb!.stop();
      restarted = new Promise<void>((resolve, reject) => {
        setTimeout(() => local.ferretdb!.start().then(resolve, reject), 4000);
      });
      return { state: 'done', result: { message_id: '<m1@test>' } };
    });
    await restarted;
    expect(record.state).toBe('done');
    const stored = (await subjects.findOne({ _id: 'call_outage' })) as unknown as {
      effects: { email: { state: string; attempts: number; result: unknown } };
    };
    expect(stored.effects.email).toMatchObject({
      state: 'done',
      attempts: 1,
      result: { message_id: '<m1@test>' },
    });

    // The job's next delivery finds the effect done and sends nothing.
    const again = await runEffect(subject, effect, { lastAttempt: false }, async () => {
      sent++;
      return { state: 'done', result: { message_id: '<m2@test>' } };
    });
    expect(again.state).toBe('done');
    expect(sent).toBe(1);
  });
});
