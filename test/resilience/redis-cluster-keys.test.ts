// REDIS_CLUSTER=true, the keys, against a real local Redis Cluster (three masters from Debian's
// redis-server, joined by `redis-cli --cluster create`), which computes the slots: the keys each
// script of the service's own is given hash to one slot, every script is accounted for, and the
// queues and firms spread over the slots. The whole service on a cluster (every area's happy
// path, a worker SIGKILL, the fault matrix's invariants) is `npm run chaos -- --redis=cluster`:
// a few minutes, too long for `npm test`.
import { readFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureRedisServer } from '../../scripts/local/redis.js';
import { startRedisCluster, type LocalRedisCluster } from '../../scripts/local/redis-cluster.js';
import { QUEUE_NAMES } from '../../jobs/queues.js';
import { redisKeys } from '../../core/platform/redis-keys.js';
import { createRedis, warnUnlessNoEviction } from '../../core/platform/redis.js';
import { scanAll } from '../../core/platform/redis-cluster.js';
import { failingSince } from '../../core/domain/events/deliveries.js';
import { capturingLogger } from '../helpers/capturing-logger.js';

let dir: string | undefined;
let local: LocalRedisCluster | undefined;
let node: Redis | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'redis-cluster-'));
  local = await startRedisCluster(await ensureRedisServer(() => {}), dir);
  node = new Redis(local.url);
});

afterAll(async () => {
  node?.disconnect();
  await local?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** The slot the cluster itself computes for `key` (CLUSTER KEYSLOT). */
const slotOf = (key: string): Promise<number> => node!.cluster('KEYSLOT', key) as Promise<number>;

describe('Redis Cluster keys', () => {
  const keys = redisKeys({ queuePrefix: 'bull', redisCluster: true });
  const sameSlot = async (group: string[]) => new Set(await Promise.all(group.map(slotOf))).size === 1;

  it('put the keys of each script call in one slot, and spread firms, campaigns and queues', async () => {
    for (const firm of ['acme', 'firm-2', 'b']) {
      // take-dial-slot.lua, release-and-wake.lua
      // take-slot-and-attempt.lua too, with the number's attempts
      const pacing = [
        keys.dialSlots(firm),
        keys.dialWaiters(firm),
        keys.dialWaking(firm),
        keys.pacingFirms(firm),
        keys.dialAttempts(firm, '+13055550100'),
        keys.dialAttemptsReady(firm),
        // attempts-rebuilt.lua
        keys.dialAttemptsRebuilding(firm),
        // request-peek.lua
        keys.dncIndexReady(firm),
        keys.dncListed(firm),
      ];
      expect(await sameSlot(pacing), pacing.join(' ')).toBe(true);
      // store-booking-reminders.lua, cancel-booking-reminders.lua
      const reminders = [keys.bookingReminders(firm, 'uid-1'), keys.firmRemindersDue(firm)];
      expect(await sameSlot(reminders), reminders.join(' ')).toBe(true);
      // begin-delivery.lua: a subject's events due and its lane to each endpoint
      const subject = `${firm}0123456789abcdef`.slice(-20);
      const lanes = [
        keys.eventsDue(firm, subject),
        keys.webhookLane(`we_1|${subject}`),
        keys.webhookLane(`we_2|${subject}`),
      ];
      expect(await sameSlot(lanes), lanes.join(' ')).toBe(true);
      // listeners-read.lua, listeners-end.lua: a firm's listeners epoch and changes under way
      const listeners = [keys.eventsListenersChanging(firm), keys.eventsListenersEpoch(firm)];
      expect(await sameSlot(listeners), listeners.join(' ')).toBe(true);
    }
    // advance-lead.lua, and the MULTI of retainCountsAfterEnd; kill-switch.lua and the resume's DEL
    const campaign = [
      keys.campaignLeads('cmp_1'),
      keys.campaignCounts('cmp_1'),
      keys.campaignWaiting('cmp_1'),
      keys.campaignParked('cmp_1'),
      keys.campaignKillMarks('cmp_1'),
      keys.campaignKillCalls('cmp_1'),
      keys.campaignKillDials('cmp_1'),
    ];
    expect(await sameSlot(campaign), campaign.join(' ')).toBe(true);
    // The reaper's lists cover several slots, and each firm's list is one of them.
    const lists = keys.pacingFirmLists();
    expect(new Set(await Promise.all(lists.map(slotOf))).size).toBe(lists.length);
    expect(lists).toContain(keys.pacingFirms('acme'));
    // One hash tag per queue: every key of a queue in one slot, the queues over several slots.
    const queueSlots = await Promise.all(QUEUE_NAMES.map((q) => slotOf(`${keys.queuePrefix(q)}:${q}:wait`)));
    expect(new Set(queueSlots).size).toBe(QUEUE_NAMES.length);
    for (const q of QUEUE_NAMES) {
      const prefix = keys.queuePrefix(q);
      expect(await sameSlot([`${prefix}:${q}:wait`, `${prefix}:${q}:active`, `${prefix}:${q}:1`])).toBe(true);
    }
  });

  it('keep the single-node spellings when the cluster flag is off, and refuse a prefix with braces', () => {
    const single = redisKeys({ queuePrefix: 'bull', redisCluster: false });
    expect(single.queuePrefix('calls')).toBe('bull');
    expect(single.bookingReminders('acme', 'u')).toBe('bull:reminders:acme:u');
    expect(keys.queuePrefix('calls')).toBe('{bull:calls}');
    expect(keys.bookingReminders('acme', 'u')).toBe('bull:reminders:{acme}:u');
    expect(keys.campaignLeads('c1')).toBe('bull:campaign:{c1}:leads');
    expect(single.webhookLane('we_1|abc')).toBe('bull:webhooks:lane:we_1|abc');
    expect(keys.webhookLane('we_1|abc')).toBe('bull:webhooks:lane:we_1|{abc}');
    expect(single.eventsDue('acme', 'abc')).toBe('bull:webhooks:due:acme:abc');
    expect(keys.dialSlots('acme')).toMatch(/^bull:\{pacing-\d+\}:acme:slots$/);
    expect(() => redisKeys({ queuePrefix: '{bull}', redisCluster: true })).toThrow(/QUEUE_PREFIX/);
  });
});

const root = join(fileURLToPath(import.meta.url), '..', '..', '..');

/** Every .lua file of the service (not node_modules) and the KEYS its `--! KEYS:` line declares. */
async function luaScripts(dir = root): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.') || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) for (const [k, v] of await luaScripts(path)) found.set(k, v);
    else if (entry.name.endsWith('.lua')) {
      const line = (await readFile(path, 'utf8')).split('\n').find((l) => l.startsWith('--! KEYS:'));
      found.set(relative(root, path), line === undefined ? [] : line.slice(9).trim().split(/\s+/));
    }
  }
  return found;
}

describe('every Lua script of the service', () => {
  it('takes several keys only where the test above puts them in one slot', async () => {
    const keys = redisKeys({ queuePrefix: 'bull', redisCluster: true });
    // The scripts given more than one key, each with the keys its caller passes (checked above
    // to share a slot). A new multi-key script fails here until its keys get a hash tag.
    const multiKey: Record<string, string[]> = {
      'core/domain/pacing/take-dial-slot.lua': [
        keys.dialSlots('f'),
        keys.dialWaiters('f'),
        keys.pacingFirms('f'),
      ],
      'core/domain/pacing/release-and-wake.lua': [
        keys.dialSlots('f'),
        keys.dialWaiters('f'),
        keys.pacingFirms('f'),
        keys.dialWaking('f'),
      ],
      'core/domain/bookings/store-booking-reminders.lua': [
        keys.bookingReminders('f', 'u'),
        keys.firmRemindersDue('f'),
      ],
      'core/domain/bookings/cancel-booking-reminders.lua': [
        keys.bookingReminders('f', 'u'),
        keys.firmRemindersDue('f'),
      ],
      'core/domain/campaigns/advance-lead.lua': [
        keys.campaignLeads('c'),
        keys.campaignCounts('c'),
        keys.campaignWaiting('c'),
      ],
      'core/domain/campaigns/kill-switch.lua': [
        keys.campaignKillMarks('c'),
        keys.campaignKillCalls('c'),
        keys.campaignKillDials('c'),
      ],
      'core/domain/compliance/take-slot-and-attempt.lua': [
        keys.dialSlots('f'),
        keys.dialWaiters('f'),
        keys.pacingFirms('f'),
        keys.dialAttempts('f', '+13055550100'),
        keys.dialAttemptsReady('f'),
      ],
      'core/domain/compliance/attempts-rebuilt.lua': [
        keys.dialAttemptsReady('f'),
        keys.dialAttemptsRebuilding('f'),
      ],
      'core/domain/events/begin-delivery.lua': [keys.eventsDue('f', 'abc'), keys.webhookLane('we_1|abc')],
      'core/domain/events/listeners-end.lua': [
        keys.eventsListenersChanging('f'),
        keys.eventsListenersEpoch('f'),
      ],
      'core/domain/events/listeners-read.lua': [
        keys.eventsListenersChanging('f'),
        keys.eventsListenersEpoch('f'),
      ],
      'core/domain/pacing/release-dial-slot.lua': [
        keys.dialSlots('f'),
        keys.dialWaiters('f'),
        keys.pacingFirms('f'),
        keys.dialWaking('f'),
      ],
      'core/domain/compliance/request-peek.lua': [
        keys.dncIndexReady('f'),
        keys.dncListed('f'),
        keys.dialAttempts('f', '+13055550100'),
        keys.dialAttemptsReady('f'),
      ],
    };
    const scripts = await luaScripts();
    expect(scripts.size).toBeGreaterThanOrEqual(13);
    const several = [...scripts].filter(([, declared]) => declared.length > 1).map(([file]) => file);
    expect(several.sort()).toEqual(Object.keys(multiKey).sort());
    for (const [file, group] of Object.entries(multiKey)) {
      expect(group.length, file).toBe(scripts.get(file)!.length);
      expect(new Set(await Promise.all(group.map(slotOf))).size, file).toBe(1);
    }
  });
});

describe('keyless commands on a cluster', () => {
  it('reach every master: the eviction check, and SCAN', async () => {
    const client = createRedis({ url: local!.url, cluster: true }, 'worker');
    try {
      // A master other than the startup node evicts: the check must still see it.
      const other = new Redis(local!.ports[2]!, '127.0.0.1');
      await other.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const { log, lines } = capturingLogger();
      await warnUnlessNoEviction(client, log);
      await other.config('SET', 'maxmemory-policy', 'noeviction');
      other.disconnect();
      expect(lines).toEqual([
        expect.objectContaining({ policy: 'allkeys-lru', node: `127.0.0.1:${local!.ports[2]}` }),
      ]);
      // Keys on every node, found by one scan of the cluster.
      const names = Array.from({ length: 30 }, (_, i) => `scan-test:${i}`);
      await Promise.all(names.map((k) => client.set(k, '1')));
      const slots = new Set(await Promise.all(names.map(slotOf)));
      expect(slots.size).toBeGreaterThan(20);
      expect((await scanAll(client, 'scan-test:*')).sort()).toEqual([...names].sort());
    } finally {
      client.disconnect();
    }
  });
});

describe('reads of several keys on a cluster', () => {
  it("a firm's endpoints' failure streaks, in several slots, are read without CROSSSLOT", async () => {
    const client = createRedis({ url: local!.url, cluster: true }, 'worker');
    try {
      const config = { queuePrefix: 'bull', redisCluster: true } as Parameters<
        typeof failingSince
      >[0]['config'];
      const keys = redisKeys(config);
      const ids = ['whep_a1', 'whep_b2', 'whep_c3', 'whep_d4'];
      const slots = new Set(await Promise.all(ids.map((id) => slotOf(keys.webhookFailingSince(id)))));
      expect(slots.size).toBeGreaterThan(1);
      await client.set(keys.webhookFailingSince('whep_b2'), '1700000000000');
      const since = await failingSince(
        { redis: client, config },
        ids.map((id) => ({ _id: id, enabled: true, failing_since: null })),
      );
      expect(since.map((d) => d?.getTime() ?? null)).toEqual([null, 1700000000000, null, null]);
    } finally {
      client.disconnect();
    }
  });
});
