// The one way Lua runs (core/platform/redis-script.ts) and the one place keys are named
// (core/platform/redis-keys.ts), against a real Redis of the test's own: a script the server has
// forgotten (SCRIPT FLUSH, as after a restart or a failover) still runs, a script file and its
// caller that disagree fail when the module loads, and the key spellings live data is stored under
// do not change by accident.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from '../helpers/private-redis.js';
import { loadRedisScript } from '../../core/platform/redis-script.js';
import { redisKeys } from '../../core/platform/redis-keys.js';

let server: PrivateRedis;
let redis: Redis;

beforeAll(async () => {
  // A private Redis: the test flushes its script cache.
  server = await startPrivateRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis?.disconnect();
  await server?.remove();
});

const renewFile = new URL('../../core/platform/redis-mutex-renew.lua', import.meta.url);

describe('Lua scripts', () => {
  it('run by SHA, and sent again when the server has forgotten them', async () => {
    const renew = loadRedisScript(renewFile, { keys: ['lock'], args: ['token', 'ttl_ms'] });
    await redis.set('t:lock', 'me', 'PX', 1000);
    expect(await renew.run(redis, { lock: 't:lock' }, { token: 'me', ttl_ms: 60_000 })).toBe(1);
    expect(await redis.pttl('t:lock')).toBeGreaterThan(1000);

    await redis.script('FLUSH');
    expect(await renew.run(redis, { lock: 't:lock' }, { token: 'other', ttl_ms: 60_000 })).toBe(0);
    // Sent in full once (EVAL), it is cached again: the next run is by SHA.
    const sha = createHash('sha1').update(readFileSync(renewFile, 'utf8')).digest('hex');
    expect(await redis.script('EXISTS', sha)).toEqual([1]);
  });

  it('fail when the module loads if the file and the caller name the keys or arguments differently', () => {
    expect(() => loadRedisScript(renewFile, { keys: ['lock'], args: ['ttl_ms', 'token'] })).toThrow(
      /declares ARGV token ttl_ms; its caller passes ttl_ms token/,
    );
    expect(() => loadRedisScript(renewFile, { keys: ['key'], args: ['token', 'ttl_ms'] })).toThrow(
      /declares KEYS lock; its caller passes key/,
    );
  });

  it('refuse further arguments a script does not declare', async () => {
    const renew = loadRedisScript(renewFile, { keys: ['lock'], args: ['token', 'ttl_ms'] });
    await expect(renew.run(redis, { lock: 't:lock' }, { token: 'me', ttl_ms: 1 }, ['extra'])).rejects.toThrow(
      /takes no further arguments/,
    );
  });
});

describe('Redis keys', () => {
  it('keep the spellings live data is stored under', () => {
    const k = redisKeys({ queuePrefix: 'bull', redisCluster: false });
    expect({
      rateLimitCounts: k.rateLimitCounts('p', 'abc'),
      readCacheEpoch: k.readCacheEpoch(),
      dialSlots: k.dialSlots('acme'),
      dialWaiters: k.dialWaiters('acme'),
      dialWaking: k.dialWaking('acme'),
      pacingFirms: k.pacingFirms('acme'),
      campaignLeads: k.campaignLeads('cmp_1'),
      campaignCounts: k.campaignCounts('cmp_1'),
      campaignParked: k.campaignParked('cmp_1'),
      bookingReminders: k.bookingReminders('acme', 'uid-1'),
      firmRemindersDue: k.firmRemindersDue('acme'),
      firmReminderMails: k.firmReminderMails('acme', 20_417),
      voiceList: k.voiceList('retell'),
      voiceListLastGood: k.voiceListLastGood('retell'),
      contactsImportsPending: k.contactsImportsPending('acme'),
      callLock: k.callLock('acme', 'provider:x'),
      campaignLock: k.campaignLock('cmp_1'),
      workflowsLock: k.workflowsLock('acme'),
      contactsImportLock: k.contactsImportLock('acme'),
      sessionRevocationLock: k.sessionRevocationLock('acme'),
      anyLock: k.anyLock(),
    }).toEqual({
      rateLimitCounts: 'bull:rate:p:abc',
      readCacheEpoch: 'bull:read-cache:epoch',
      dialSlots: 'bull:pacing:acme:slots',
      dialWaiters: 'bull:pacing:acme:waiters',
      dialWaking: 'bull:pacing:acme:waking',
      pacingFirms: 'bull:pacing:firms',
      campaignLeads: 'bull:campaign:cmp_1:leads',
      campaignCounts: 'bull:campaign:cmp_1:counts',
      campaignParked: 'bull:campaign:cmp_1:parked',
      bookingReminders: 'bull:reminders:acme:uid-1',
      firmRemindersDue: 'bull:reminders-due:acme',
      firmReminderMails: 'bull:reminder-mails:acme:20417',
      voiceList: 'bull:cache:voices:retell',
      voiceListLastGood: 'bull:cache:voices-last:retell',
      contactsImportsPending: 'bull:contacts-import:pending:acme',
      callLock: 'bull:lock:call:acme:provider:x',
      campaignLock: 'bull:lock:campaign:cmp_1',
      workflowsLock: 'bull:lock:workflows:acme',
      contactsImportLock: 'bull:lock:contacts-import:acme',
      sessionRevocationLock: 'bull:lock:session-revocation:acme',
      anyLock: 'bull:lock:*',
    });
  });
});
