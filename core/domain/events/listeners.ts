import { randomBytes } from 'node:crypto';
import type { Services } from '../../wiring/services.js';
import { redisKeys } from '../../platform/redis-keys.js';
import { loadRedisScript } from '../../platform/redis-script.js';
import { listEndpoints, matchesFilter } from './endpoints.js';
import { triggerIndex, triggerKeyOf } from '../workflows/versions.js';
import { patternsMatching } from '../workflows/vocabulary.js';
import { freshCacheVersion } from '../../platform/cache-version.js';

// Who listens to a firm's events (docs/events.md#who-an-event-is-for): its enabled webhook
// endpoints whose filter takes the type, its active workflows with a trigger on the type or its
// group, and its workflow runs under way (a `wait_for` step may be waiting on any event about its
// lead). An event nobody listens to is recorded and no more: no fan-out job, no due mark — most
// firms have no endpoint and no workflow, and for them a fan-out only handed over to nothing.
//
// The decision is made as the event is recorded, from a per-process cache of the firm's listeners
// kept under the firm's listeners epoch, with no database read while nothing changed:
// - every change to a firm's listeners (an endpoint made, changed or deleted; a workflow's trigger
//   index written) is `changeListeners`: it marks itself under way, writes, then moves the epoch
//   and unmarks itself (one script each side, the mark lapsing after CHANGE_LAPSE_MS should the
//   writer die);
// - a recording, after its event is stored, reads the epoch and the marks in one script. With a
//   change under way the event is fanned out as before, its job first waiting for the change to
//   end (`afterChange`), so an event recorded while an endpoint is being made reaches it; with
//   none, the cache read under that epoch decides — any change that began later began after the
//   event was stored, and an event stored before an endpoint existed is not sent to it (a replay
//   sends it).
// The epoch is a fresh random value at each change (core/platform/cache-version.ts), not a
// counter: after Redis lost its data a counter would start again at a value a process's cache was
// made under, and that cache (nobody listening to a type) would pass for current while a new
// endpoint missed events. The cache also lapses after ROUTE_TTL_MS, so a process of the release
// before this one (which changes listeners without the epoch) is followed within seconds during a
// rolling deploy.

const CHANGE_LAPSE_MS = 30_000;
const ROUTE_TTL_MS = 10_000;

const BEGIN = loadRedisScript(new URL('./listeners-begin.lua', import.meta.url), {
  keys: ['changing'],
  args: ['token', 'now', 'lapse'],
});
const END = loadRedisScript(new URL('./listeners-end.lua', import.meta.url), {
  keys: ['changing', 'epoch'],
  args: ['token', 'epoch'],
});
const READ = loadRedisScript(new URL('./listeners-read.lua', import.meta.url), {
  keys: ['changing', 'epoch'],
  args: ['now'],
});

const gateKeys = (services: Services, firm: string) => {
  const keys = redisKeys(services.config);
  return { changing: keys.eventsListenersChanging(firm), epoch: keys.eventsListenersEpoch(firm) };
};

/**
 * Runs `write`, a change to who listens to `firm`'s events, marked as under way while it runs:
 * refused (the Redis error) before anything is written when the mark cannot be set.
 */
export async function changeListeners<T>(
  services: Services,
  firm: string,
  write: () => Promise<T>,
): Promise<T> {
  const token = randomBytes(9).toString('base64url');
  const now = Date.now();
  const keys = gateKeys(services, firm);
  await BEGIN.run(services.redis, { changing: keys.changing }, { token, now, lapse: now + CHANGE_LAPSE_MS });
  try {
    return await write();
  } finally {
    // Should Redis fail here, the mark lapses by itself: events are fanned out meanwhile.
    await END.run(services.redis, keys, { token, epoch: freshCacheVersion() }).catch(() => undefined);
  }
}

/** The firm's listeners' epoch (null: never changed) and whether a change is under way. */
async function readGate(
  services: Services,
  firm: string,
): Promise<{ epoch: string | null; changing: boolean }> {
  const [epoch, changing] = (await READ.run(services.redis, gateKeys(services, firm), {
    now: Date.now(),
  })) as [string | null, number];
  return { epoch: epoch ?? null, changing: Number(changing) > 0 };
}

/** Whether a change to the firm's listeners is under way now. */
export async function listenersChanging(services: Services, firm: string): Promise<boolean> {
  return (await readGate(services, firm)).changing;
}

interface Route {
  epoch: string | null;
  until: number;
  /** The event filters of the firm's enabled endpoints. */
  filters: string[][];
  /** Trigger index keys (`<firm>|<type or group>`) read so far: whether any workflow is listed. */
  triggers: Map<string, boolean>;
}

const routes = new Map<string, Route>();

async function routeOf(services: Services, firm: string, epoch: string | null): Promise<Route> {
  const known = routes.get(firm);
  if (known !== undefined && known.epoch === epoch && known.until > Date.now()) return known;
  const endpoints = await listEndpoints(services.mongo.db, firm);
  const route: Route = {
    epoch,
    until: Date.now() + ROUTE_TTL_MS,
    filters: endpoints.filter((e) => e.enabled).map((e) => e.events),
    triggers: new Map(),
  };
  if (routes.size >= 10_000) routes.delete(routes.keys().next().value!);
  routes.set(firm, route);
  return route;
}

async function triggered(services: Services, route: Route, firm: string, type: string): Promise<boolean> {
  const keys = patternsMatching(type).map((pattern) => triggerKeyOf(firm, pattern));
  const missing = keys.filter((k) => !route.triggers.has(k));
  if (missing.length > 0) {
    // Point reads by _id (FerretDB serves an `_id` `$in` by a scan of the collection).
    const docs = await Promise.all(missing.map((k) => triggerIndex(services.mongo.db).findOne({ _id: k })));
    missing.forEach((k, i) => route.triggers.set(k, (docs[i]?.entries.length ?? 0) > 0));
  }
  return keys.some((k) => route.triggers.get(k) === true);
}

/** Whom an event goes to: nobody (no fan-out), its fan-out now, or its fan-out once a change under way ends. */
export type Audience = 'none' | 'listeners' | 'after_change';

/** For each event (already stored), whether it is fanned out; one read per firm while nothing changed. */
export async function audiences(
  services: Services,
  events: ReadonlyArray<{ firm: string; type: string }>,
): Promise<Audience[]> {
  const firms = [...new Set(events.map((e) => e.firm))];
  const keys = redisKeys(services.config);
  const byFirm = new Map(
    await Promise.all(
      firms.map(async (firm) => {
        // Apart: on a Redis Cluster the runs under way are on another slot than the gate.
        const [gate, running] = await Promise.all([
          readGate(services, firm),
          services.redis.exists(keys.workflowRunsActive(firm)),
        ]);
        return [firm, { gate, running: running > 0 }] as const;
      }),
    ),
  );
  const out: Audience[] = [];
  for (const e of events) {
    const { gate, running } = byFirm.get(e.firm)!;
    if (gate.changing) out.push('after_change');
    else if (running) out.push('listeners');
    else {
      const route = await routeOf(services, e.firm, gate.epoch);
      const heard =
        route.filters.some((f) => matchesFilter(f, e.type)) ||
        (await triggered(services, route, e.firm, e.type));
      out.push(heard ? 'listeners' : 'none');
    }
  }
  return out;
}
