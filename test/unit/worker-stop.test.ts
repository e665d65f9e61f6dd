// A stopping worker's two rules (workers/runner.ts): every step is timed back from the one
// deadline the signal set (workers/stop-schedule.ts), and once the grace is over no effect
// begins while one under way may finish and record (core/platform/db/effect-gate.ts).
import { describe, expect, it } from 'vitest';
import { EffectGate } from '../../core/platform/db/effect-gate.js';
import { runEffect } from '../../core/platform/db/effect-recorder.js';
import type { EffectSubject } from '../../core/platform/db/effect-records.js';
import { stopSchedule } from '../../workers/stop-schedule.js';

const flush = () => new Promise((resolve) => setTimeout(resolve, 10));

describe('stopSchedule', () => {
  it('times the grace, the hand-back and the close back from the deadline, in that order', () => {
    const signal = 1_000_000;
    expect(stopSchedule(signal + 25_000, 25_000)).toEqual({
      graceEnd: signal + 20_000,
      handBack: signal + 23_000,
      closeBy: signal + 24_500,
      deadline: signal + 25_000,
    });
    // A short timeout keeps the order, scaled down, and everything after the signal.
    const short = stopSchedule(signal + 1000, 1000);
    expect(signal < short.graceEnd && short.graceEnd < short.handBack).toBe(true);
    expect(short.handBack < short.closeBy && short.closeBy < short.deadline).toBe(true);
  });
});

describe('EffectGate', () => {
  it('lets effects begin while open and counts them until they are recorded', async () => {
    const gate = new EffectGate();
    const pass = await gate.enter();
    expect(gate.busy).toBe(true);
    gate.close();
    await flush();
    expect(gate.busy).toBe(true); // the effect under way may finish
    pass();
    pass(); // once
    expect(gate.busy).toBe(false);
  });

  it('passes a caller holding a lock at once: a pass while open, null once closed and nothing parked', async () => {
    const gate = new EffectGate();
    const pass = gate.enterNow();
    expect(pass).not.toBeNull();
    expect(gate.busy).toBe(true);
    pass!();
    gate.close();
    expect(gate.enterNow()).toBeNull();
    expect(gate.busy).toBe(false);
    // The caller, its lock let go of, then parks through `enter`.
    let entered = false;
    void gate.enter().then(() => (entered = true));
    await flush();
    expect(entered).toBe(false);
    await gate.stopped();
  });

  it('a job parked by one effect while another is under way has stopped only once that one is recorded', async () => {
    const gate = new EffectGate();
    const underWay = await gate.enter(); // one effect: its request sent
    gate.close();
    void gate.enter(); // its sibling, side by side: parked
    let stopped = false;
    void gate.stopped().then(() => (stopped = true));
    await flush();
    expect({ busy: gate.busy, stopped }).toEqual({ busy: true, stopped: false });
    underWay();
    await flush();
    expect({ busy: gate.busy, stopped }).toEqual({ busy: false, stopped: true });
  });

  it('a job that never parks has not stopped (its worker waits for it to end)', async () => {
    const gate = new EffectGate();
    gate.close();
    let stopped = false;
    void gate.stopped().then(() => (stopped = true));
    await flush();
    expect(stopped).toBe(false);
  });

  it('once closed, an effect never begins: runEffect neither marks nor performs it', async () => {
    const doc: Record<string, unknown> = { _id: 'call_1' };
    const subject = {
      collection: {
        findOne: async () => doc,
        updateOne: async (_q: unknown, update: { $set: Record<string, unknown> }) =>
          Object.assign(doc, update.$set),
      },
      id: 'call_1',
      exclusive: (write: () => Promise<unknown>) => write(),
    } as unknown as EffectSubject;
    const gate = new EffectGate();
    let performed = 0;
    const perform = async () => (performed++, { state: 'done' as const, result: {} });
    await runEffect(subject, { path: 'effects.team_chat' }, { lastAttempt: false, gate }, perform);
    expect(performed).toBe(1);

    gate.close();
    let returned = false;
    void runEffect(subject, { path: 'effects.email' }, { lastAttempt: false, gate }, perform).then(
      () => (returned = true),
    );
    await flush();
    expect({ performed, returned, marked: 'effects.email' in doc }).toEqual({
      performed: 1,
      returned: false,
      marked: false,
    });
    // The parked job has nothing under way: the worker need not wait for it.
    expect(gate.busy).toBe(false);
    await gate.stopped();
  });
});
