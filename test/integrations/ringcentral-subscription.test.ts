// A firm's RingCentral webhook subscription over time (docs/ringcentral.md#missed-call-callbacks),
// against the spec-checked RingCentral (test/fakes/ringcentral-server.ts): renewed before it
// lapses, across a worker restart, and made again when RingCentral drops it. A stack of its own:
// the check runs every 250 ms here, and that check refreshes every connected firm's token, which
// would race the token tests of ringcentral.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Workers } from '../../workers/runner.js';
import { startFakeRingCentral, type FakeRingCentral } from '../fakes/ringcentral-server.js';
import { eventually } from '../helpers/eventually.js';
import { createFirm, type Stack, startInProcessWorkers } from '../helpers/stack.js';
import { connectRingCentral, startRingCentralStack } from './ringcentral-support.js';

/**
 * The lifetime RingCentral grants here. A subscription is renewed when a fifth of it has passed,
 * so a worker restart has about 8 s before it would lapse: a loaded machine's stop and start fit.
 */
const LIFETIME_S = 10;
const CHECK_MS = 250;

let rc: FakeRingCentral;
let stack: Stack;
let workers: Workers | undefined;

beforeAll(async () => {
  rc = await startFakeRingCentral();
  stack = await startRingCentralStack(rc, { RINGCENTRAL_SUBSCRIPTION_CHECK_MS: String(CHECK_MS) });
  workers = startInProcessWorkers(stack);
});
afterAll(async () => {
  await workers?.stop();
  await stack?.stop();
  await rc?.close();
});

describe('the subscription', () => {
  it('is renewed before it lapses, across a worker restart, and made again when RingCentral drops it', async () => {
    rc.maxSubscriptionSeconds = LIFETIME_S;
    const firm = await createFirm(stack);
    await connectRingCentral(stack, firm);
    const ours = () => [...rc.subscriptions.values()].filter((s) => s.address.includes(`/${firm.slug}/`));
    const first = ours()[0]!;
    const renewals = () =>
      rc.requests.filter(
        (r) => r.method === 'POST' && r.path === `/restapi/v1.0/subscription/${first.id}/renew`,
      ).length;
    await eventually(async () => expect(renewals()).toBeGreaterThanOrEqual(2), 30_000, 100);
    await workers!.stop();
    workers = startInProcessWorkers(stack);
    const atRestart = renewals();
    await eventually(async () => expect(renewals()).toBeGreaterThan(atRestart), 30_000, 100);
    // Never lapsed: still the first subscription, alive.
    expect(ours().map((s) => s.id)).toEqual([first.id]);
    expect(rc.subscriptions.get(first.id)!.expiresAt).toBeGreaterThan(Date.now());
    rc.subscriptions.delete(first.id);
    const remade = await eventually(
      async () => {
        const now = ours();
        expect(now).toHaveLength(1);
        return now[0]!;
      },
      30_000,
      100,
    );
    expect(remade.id).not.toBe(first.id);
    console.log(
      `subscription: lifetime ${LIFETIME_S} s, checked every ${CHECK_MS} ms: ${renewals()} renewals (worker restarted after ${atRestart}); dropped → re-created`,
    );
  });
});
