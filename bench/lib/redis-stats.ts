// Redis commands by master, for a bench on one redis-server or on a Redis Cluster: INFO
// commandstats of every master (a keyless command reaches one node of a cluster, so each is
// asked), the difference between two reads, the bench's own polls taken out, and a line saying
// how the load spread.
import type { RedisClient } from '../../core/platform/redis.js';
import { masters } from '../../core/platform/redis-cluster.js';

/** Per master (`host:port`): command → calls. */
export type Stats = Map<string, Map<string, number>>;

/**
 * INFO commandstats of every master (one server on a single node), by master (`host:port`):
 * command → calls so far. A keyless command reaches one node of a cluster, so each is asked.
 */
export async function commandStatsByMaster(redis: RedisClient): Promise<Stats> {
  const out: Stats = new Map();
  for (const node of masters(redis)) {
    const stats = await node.info('commandstats');
    const counts = new Map<string, number>();
    for (const m of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts.set(m[1]!, Number(m[2]));
    out.set(`${node.options.host ?? '127.0.0.1'}:${node.options.port ?? 6379}`, counts);
  }
  return out;
}

/** Commands each master served between two reads of commandStatsByMaster. */
export function delta(before: Stats, after: Stats): Stats {
  const out: Stats = new Map();
  for (const [node, counts] of after) {
    const was = before.get(node) ?? new Map<string, number>();
    out.set(node, new Map([...counts].map(([cmd, n]) => [cmd, n - (was.get(cmd) ?? 0)])));
  }
  return out;
}

/** `served` less `times` × `one` (the bench's own looks at the queues), never below 0. */
export function subtract(served: Stats, one: Stats, times: number): Stats {
  const out: Stats = new Map();
  for (const [node, counts] of served) {
    const poll = one.get(node) ?? new Map<string, number>();
    // The look's own INFO commandstats reads are not in `served`'s polls: they happen once a run.
    out.set(
      node,
      new Map(
        [...counts].map(([cmd, n]) => [
          cmd,
          Math.max(0, n - (cmd === 'info' ? 0 : times * (poll.get(cmd) ?? 0))),
        ]),
      ),
    );
  }
  return out;
}

/**
 * Per master: commands served per analysed call and per second, its share of the whole, and its
 * busiest commands — how the load spreads (one server on a single node).
 */
export function perMaster(served: Stats, calls: number, seconds: number): string {
  const totals = [...served].map(([node, counts]) => {
    const sum = [...counts].filter(([cmd]) => cmd !== 'info').reduce((n, [, c]) => n + c, 0);
    const top = [...counts]
      .filter(([cmd]) => cmd !== 'info')
      .sort((a, b) => b[1] - a[1])
      .slice(0, 4)
      .map(([cmd, c]) => `${cmd} ${(c / calls).toFixed(0)}`)
      .join(', ');
    return { node, sum, top };
  });
  const all = totals.reduce((n, t) => n + t.sum, 0);
  const lines = totals.map(
    (t) =>
      `${t.node} ${(t.sum / calls).toFixed(0)} a call, ${(t.sum / seconds).toFixed(0)}/s, ${((100 * t.sum) / all).toFixed(0)} % (${t.top})`,
  );
  return `Redis commands served (the bench's polls out): ${(all / calls).toFixed(0)} a call; per master: ${lines.join('; ')}`;
}
