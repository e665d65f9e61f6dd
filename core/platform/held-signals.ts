// A SIGTERM (or SIGINT) that reaches a process still loading its modules: Node's default would
// kill it by the signal (no exit 0, the chaos run's "SIGTERM: exit 0 within 25 s" failed on a
// worker restarted a moment before). An entry (workers/main.ts, api/server.ts) imports this module
// first and holds the signals while it loads: before it starts any work (no job taken, no port
// open) a signal ends it at once with exit 0; once it is starting work, the signal is kept, with
// its time, for the real handler (stopOnSignals in ./process.ts), which stops the work it started
// within the deadline counted from that time. No import here: it must load before anything else.

export interface HeldSignal {
  signal: NodeJS.Signals;
  /** When it arrived (ms since epoch): the stop's deadline counts from here. */
  at: number;
}

let starting = false;
let held: HeldSignal | undefined;

const onSignal = (signal: NodeJS.Signals): void => {
  if (!starting) {
    process.stderr.write(
      `${JSON.stringify({ level: 30, time: Date.now(), signal, msg: 'stopped while loading' })}\n`,
    );
    process.exit(0);
  }
  held ??= { signal, at: Date.now() };
};

/** From now until the real handler takes over, SIGTERM and SIGINT are held (the entry's first step). */
export function holdSignalsWhileLoading(): void {
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

/** The process is about to take work (connect, listen, consume): a signal now waits for the real stop. */
export function startingWork(): void {
  starting = true;
}

/** The real handler is in place: the holding ends; returns the signal that arrived meanwhile, if one did. */
export function takeHeldSignal(): HeldSignal | undefined {
  process.off('SIGTERM', onSignal);
  process.off('SIGINT', onSignal);
  return held;
}
