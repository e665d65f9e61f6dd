// The one way the harness runs a child process (npm start, the local stores, the tests' web and
// worker processes, the chaos run, the fuzzer, the benchmarks): start it, send its output
// somewhere, wait until it is ready, and stop it with a signal and then SIGKILL after a grace.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { portHeldBy } from './port-owner.js';

/** Where the child's stdout and stderr go. */
export type Output =
  | 'ignore'
  /** Straight to our stdout and stderr (a tool whose progress the user watches). */
  | 'inherit'
  /** Appended to this file by the child itself (so nothing is lost if we exit first). */
  | { file: string }
  /** Each line, after `prefix`, to our stdout and stderr (or both to stderr: `to: 'stderr'`). */
  | { prefix: string; to?: 'stderr' };

/** When the child counts as ready. */
export type Readiness =
  /** GET answers 200, from a port the child (or a descendant) listens on. */
  | { url: string }
  /** 127.0.0.1:port accepts a TCP connection, and the child (or a descendant) listens on it. */
  | { port: number }
  /** The caller's own check; false or a throw means not yet (the last error is reported). */
  | { probe: () => Promise<boolean> };

export interface LaunchOptions {
  /** Names the process in messages. */
  name: string;
  command: string;
  args?: string[];
  /** The whole environment (default: ours). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  output?: Output;
  ready?: Readiness;
  readyTimeoutMs?: number;
  /**
   * A process group of its own: a terminal's Ctrl-C then reaches only us, and we stop the child
   * when its turn comes (a store after the processes using it). It is also a session of its
   * own, which Linux schedules as a CPU share of its own (autogroup).
   */
  ownGroup?: boolean;
  uid?: number;
  gid?: number;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Launched {
  name: string;
  pid: number | undefined;
  child: ChildProcess;
  /** Resolves once the child has exited (or could not be started). */
  exited: Promise<Exit>;
  /** Resolves once the readiness check passes; rejects (having stopped the child) if it exits first or times out. */
  ready: Promise<void>;
  running(): boolean;
  /** Sends `signal`, then SIGKILL after `graceMs`; resolves once the child has exited. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<Exit>;
}

export class LaunchError extends Error {}

/**
 * Starts a server on ports chosen just before (freePort), again with fresh ports when it exits at
 * start: between the choice and the bind, another process may take a port (the OS hands the same
 * ephemeral range to every client connection on the machine). `start` picks its ports each time.
 */
export async function startOnFreePorts<T>(start: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts || !(err instanceof LaunchError) || !/ at start/.test(err.message)) throw err;
    }
  }
}

/** Children still running: SIGKILLed if we exit first, so that none outlives the harness. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** Resolves with the child's exit (at once if it has exited). */
export function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      return resolve({ code: child.exitCode, signal: child.signalCode });
    }
    child.once('exit', (code, signal) => resolve({ code, signal }));
    // A command that cannot be started emits 'error' and never 'exit'.
    child.once('error', () => {
      if (child.pid === undefined) resolve({ code: null, signal: null });
    });
  });
}

/** Whether 127.0.0.1:port accepts a TCP connection now. */
export function portAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The port a URL names (its scheme's default when it names none). */
function portOf(url: string): number {
  const { port, protocol } = new URL(url);
  return port !== '' ? Number(port) : protocol === 'https:' ? 443 : 80;
}

/**
 * The readiness check. A port that answers must be the child's own (port-owner.ts): a port chosen
 * just before the start may have been taken by another server meanwhile, and then the child exits
 * at start (EADDRINUSE) instead of being taken for ready.
 */
function probeOf(ready: Readiness, pid: number | undefined): () => Promise<boolean> {
  const own = (port: number) => (pid === undefined ? Promise.resolve(true) : portHeldBy(port, pid));
  if ('url' in ready) {
    const port = portOf(ready.url);
    return async () => (await fetch(ready.url)).status === 200 && (await own(port));
  }
  if ('port' in ready) return async () => (await portAnswers(ready.port)) && (await own(ready.port));
  return ready.probe;
}

function forwardLines(child: ChildProcess, prefix: string, toStderr: boolean): void {
  for (const [stream, out] of [
    [child.stdout, toStderr ? process.stderr : process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    let partial = '';
    stream?.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.length > 0) out.write(`${prefix}${line}\n`);
    });
    stream?.on('end', () => {
      if (partial.length > 0) out.write(`${prefix}${partial}\n`);
    });
  }
}

async function lastLines(output: Output | undefined): Promise<string> {
  if (typeof output !== 'object' || !('file' in output)) return '';
  const text = await readFile(output.file, 'utf8').catch(() => '');
  const tail = text.trim().split('\n').slice(-3).join(' | ');
  return tail ? `: ${tail}` : '';
}

export function launch(options: LaunchOptions): Launched {
  const { output = 'ignore' } = options;
  const fd = typeof output === 'object' && 'file' in output ? openSync(output.file, 'a') : undefined;
  const stdio = fd ?? (typeof output === 'string' ? output : 'pipe');
  const child = spawn(options.command, options.args ?? [], {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['ignore', stdio, stdio],
    detached: options.ownGroup ?? false,
    ...(options.uid === undefined ? {} : { uid: options.uid }),
    ...(options.gid === undefined ? {} : { gid: options.gid }),
  });
  if (fd !== undefined) closeSync(fd);
  if (typeof output === 'object' && 'prefix' in output) {
    forwardLines(child, output.prefix, output.to === 'stderr');
  }
  let spawnError: Error | undefined;
  child.on('error', (err) => (spawnError = err));
  live.add(child);
  const exited = exitOf(child).then((exit) => {
    live.delete(child);
    return exit;
  });
  const running = (): boolean => child.exitCode === null && child.signalCode === null && !spawnError;

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', graceMs = 10_000): Promise<Exit> => {
    if (running() && child.pid !== undefined) {
      child.kill(signal);
      const hard = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(hard);
    }
    return exited;
  };

  const waitReady = async (ready: Readiness): Promise<void> => {
    const probe = probeOf(ready, child.pid);
    const timeoutMs = options.readyTimeoutMs ?? 60_000;
    const started = Date.now();
    let lastError: unknown;
    for (;;) {
      if (!running()) {
        const { code, signal } = await exited;
        const how = spawnError?.message ?? `exited with ${signal ?? `code ${code}`}`;
        throw new LaunchError(`${options.name} ${how} at start${await lastLines(output)}`);
      }
      try {
        if (await probe()) return;
      } catch (err) {
        lastError = err;
      }
      if (Date.now() - started > timeoutMs) {
        await stop();
        const why = lastError instanceof Error ? ` (${lastError.message.split('\n')[0]})` : '';
        throw new LaunchError(`${options.name} was not ready within ${timeoutMs} ms${why}`);
      }
      await sleep(100);
    }
  };
  const ready = options.ready === undefined ? Promise.resolve() : waitReady(options.ready);
  // Observed here so that a caller who never awaits it gets no unhandled rejection.
  ready.catch(() => {});
  return { name: options.name, pid: child.pid, child, exited, ready, running, stop };
}

/** A server a caller can stop and start again (a test's outage): `start` launches it unless it runs. */
export interface Restartable {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Not launched yet: `start` launches it (and waits until ready), `stop` sends SIGTERM and waits.
 * A start again after a stop (an outage) that exits at once is tried again twice, a second and
 * two seconds later, as a supervisor restarts a service that failed: its port, which it must
 * have again, may be held for a moment. The error names the last attempt's reason.
 */
export function restartable(options: LaunchOptions): Restartable {
  let server: Launched | undefined;
  let started = false;
  return {
    stop: async () => {
      await server?.stop('SIGTERM');
    },
    start: async () => {
      if (server?.running()) return;
      const attempts = started ? 3 : 1;
      for (let attempt = 1; ; attempt++) {
        server = launch(options);
        try {
          await server.ready;
          started = true;
          return;
        } catch (err) {
          if (attempt >= attempts || !(err instanceof LaunchError) || !/ at start/.test(err.message)) {
            if (attempt > 1 && err instanceof Error) err.message += ` (attempt ${attempt} of ${attempts})`;
            throw err;
          }
          await sleep(1_000 * attempt);
        }
      }
    },
  };
}
