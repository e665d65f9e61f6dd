import type {
  MongoClient,
  ServerDescriptionChangedEvent,
  ServerHeartbeatFailedEvent,
  ServerHeartbeatStartedEvent,
  ServerHeartbeatSucceededEvent,
} from 'mongodb';
import { setTimeout as sleep } from 'node:timers/promises';

// The driver's server monitor can hang for good. A heartbeat written to a monitoring socket that
// the server has just closed (the socket destroyed, its 'close' event not yet emitted) waits for a
// 'drain' that never comes (mongodb 7.9, Connection.writeCommand: a write to a destroyed socket
// neither throws nor emits 'error'). The monitor then never checks its server again: once an
// operation has failed on the dead connections, the server stays Unknown and every operation fails
// server selection with the old "connection N to host closed" error, although the database is back.
// The chaos run saw a worker started just before a FerretDB restart fail every job for 17 minutes.
//
// The watchdog watches the heartbeats through the client's monitoring events: a heartbeat that has
// neither succeeded nor failed long after any heartbeat may take (its socket timeout is
// connectTimeoutMS, heartbeatFrequencyMS more when awaited), on a server that cannot be selected,
// is stuck. The client is then closed and connected again: new monitors, new pools. Handles made
// from it (Db, Collection) stay valid; operations meanwhile fail as while the database is down
// (503 in the API, a retry in a worker).

export interface WatchdogLog {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface WatchdogOptions {
  /** How long a heartbeat may stay unanswered before it counts as stuck. */
  stuckAfterMs: number;
  /** How often to look. */
  checkEveryMs?: number;
  /** The pause between two connect attempts while the database is still down. */
  reconnectPauseMs?: number;
  log?: WatchdogLog;
}

export interface HeartbeatWatchdog {
  /** How many times the client was connected again. */
  readonly recoveries: number;
  /** Stops watching (and waits for a reconnect under way); the caller closes the client after. */
  stop(): Promise<void>;
}

export function watchHeartbeats(client: MongoClient, options: WatchdogOptions): HeartbeatWatchdog {
  const { stuckAfterMs, checkEveryMs = 1000, reconnectPauseMs = 1000, log } = options;
  /** Server address → when its unanswered heartbeat started. */
  const outstanding = new Map<string, number>();
  /** Servers whose last description could be selected (not Unknown). */
  const selectable = new Set<string>();
  let stopped = false;
  let recovering: Promise<void> | undefined;
  let recoveries = 0;

  const onStarted = (e: ServerHeartbeatStartedEvent) => outstanding.set(e.connectionId, Date.now());
  const onEnded = (e: ServerHeartbeatSucceededEvent | ServerHeartbeatFailedEvent) =>
    outstanding.delete(e.connectionId);
  const onDescription = (e: ServerDescriptionChangedEvent) => {
    if (e.newDescription.type === 'Unknown') selectable.delete(e.address);
    else selectable.add(e.address);
  };
  const onClosed = () => {
    outstanding.clear();
    selectable.clear();
  };
  client.on('serverHeartbeatStarted', onStarted);
  client.on('serverHeartbeatSucceeded', onEnded);
  client.on('serverHeartbeatFailed', onEnded);
  client.on('serverDescriptionChanged', onDescription);
  client.on('topologyClosed', onClosed);

  const reconnect = async (address: string, stuckForMs: number): Promise<void> => {
    if (stuckForMs > 0) {
      log?.warn({ address, stuckForMs }, 'MongoDB server monitor stuck; connecting the client again');
    } else {
      log?.warn({ address }, 'MongoDB client closed by the driver; connecting it again');
    }
    onClosed();
    await client.close().catch(() => undefined);
    while (!stopped) {
      try {
        await client.connect();
        recoveries += 1;
        log?.info({ address }, 'MongoDB client connected again');
        return;
      } catch {
        // Still down: operations fail as they would anyway; try again shortly.
        await sleep(reconnectPauseMs);
      }
    }
  };

  const check = () => {
    if (stopped || recovering !== undefined) return;
    const now = Date.now();
    for (const [address, since] of outstanding) {
      if (now - since < stuckAfterMs || selectable.has(address)) continue;
      recovering = reconnect(address, now - since).finally(() => (recovering = undefined));
      return;
    }
  };
  // The driver (7.9) closes its topology when the first connection fails (a process started
  // while MongoDB is down) but keeps it on the client, so every later operation fails with
  // "Topology is closed" and nothing connects again by itself. A close nobody asked for (the
  // service's own closes stop the watchdog first) is recovered like a stuck monitor.
  const onUnexpectedClose = () => {
    if (stopped || recovering !== undefined) return;
    recovering = reconnect('topology closed', 0).finally(() => (recovering = undefined));
  };
  client.on('topologyClosed', onUnexpectedClose);

  const timer = setInterval(check, checkEveryMs);
  timer.unref();

  return {
    get recoveries() {
      return recoveries;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await recovering;
      client.off('serverHeartbeatStarted', onStarted);
      client.off('serverHeartbeatSucceeded', onEnded);
      client.off('serverHeartbeatFailed', onEnded);
      client.off('serverDescriptionChanged', onDescription);
      client.off('topologyClosed', onClosed);
      client.off('topologyClosed', onUnexpectedClose);
    },
  };
}
