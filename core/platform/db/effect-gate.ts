// One job's gate to the outside world while its worker stops (workers/runner.ts). Every effect
// (runEffect, a reminder's send) passes it before it is marked: while the gate is open the
// effect runs and is counted until its outcome is recorded; once the stopping worker has
// closed it, an effect that has not begun never begins — its job is parked where it stands, to
// be handed back and run by another worker — while one already under way may finish its
// request and record it, so the next worker finds it done instead of repeating it.

/** Called once the effect's outcome is recorded (or its attempt has given up). */
export type EffectPass = () => void;

export class EffectGate {
  private underWay = 0;
  private closed = false;
  private parked = false;
  private stoppers: Array<() => void> = [];

  /**
   * Lets an effect begin: resolves at once with its pass while the gate is open. Once closed it
   * never resolves: the job stops before anything is marked or sent.
   */
  enter(): Promise<EffectPass> {
    const pass = this.enterNow();
    if (pass !== null) return Promise.resolve(pass);
    this.parked = true;
    this.wake();
    return new Promise<EffectPass>(() => {});
  }

  /**
   * As `enter`, without waiting (for a caller holding a lock it must not keep while parked): the
   * pass while the gate is open; null once closed, nothing counted — the caller lets go of what
   * it holds, then calls `enter`, which parks the job.
   */
  enterNow(): EffectPass | null {
    if (this.closed) return null;
    this.underWay++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.underWay--;
      this.wake();
    };
  }

  /** No effect begins from now on. */
  close(): void {
    this.closed = true;
  }

  /**
   * Whether an effect of this job is under way (sent, or about to be, and not yet recorded). A
   * job's effects run side by side: one may be under way while another has parked the job.
   */
  get busy(): boolean {
    return this.underWay > 0;
  }

  /**
   * Resolves once the job is parked with no effect under way: it will do nothing more, and can be
   * handed back. (A job that never parks ends instead: its worker waits for that.)
   */
  stopped(): Promise<void> {
    if (this.parked && !this.busy) return Promise.resolve();
    return new Promise<void>((resolve) => this.stoppers.push(resolve));
  }

  private wake(): void {
    if (this.busy || !this.parked) return;
    for (const resolve of this.stoppers.splice(0)) resolve();
  }
}
