import { describe, expect, it } from 'vitest';
import { originsTable, type OriginCounts } from '../../bench/lib/command-origins.js';

// The bench's map of a call's commands by origin (BENCH_COST_ORIGINS=1): MongoDB calls and Redis
// commands counted by the preload (bench/lib/command-origins.mjs), printed per analysed call in
// two sections, each with its own total.
const counts = (entries: Array<[string, number]>): OriginCounts => new Map(entries);

describe('the command origins table', () => {
  const before = counts([
    ['worker\tfindOne\tcalls\tplaceCall (workers/processors/calls)', 10],
    ['worker\tredis.set\t-\tapplyEvent (workers/processors/calls)', 4],
  ]);
  const after = counts([
    ['worker\tfindOne\tcalls\tplaceCall (workers/processors/calls)', 30],
    ['worker\tinsertMany\tevents\trecordEvents (core/domain/events/record-event)', 40],
    ['worker\tredis.set\t-\tapplyEvent (workers/processors/calls)', 34],
    ['web\tredis.evalsha\t-\tRateLimiter.hit (api/middleware/rate-limit)', 70],
    ['worker\tredis.zadd (pipelined)\t-\tregister (core/domain/calls/dials-under-way)', 10],
  ]);
  const lines = originsTable(before, after, 10).split('\n');

  it('prints the MongoDB calls and the Redis commands apart, each with its total per call', () => {
    const redisAt = lines.findIndex((l) => l.includes('Redis commands per call by origin'));
    expect(lines[0]).toBe('  MongoDB calls per call by origin: 6.0');
    expect(redisAt).toBeGreaterThan(0);
    expect(lines[redisAt]).toMatch(/: 11\.0$/);
    const mongo = lines.slice(1, redisAt);
    const redis = lines.slice(redisAt + 1);
    expect(mongo.map((l) => l.trim().split(/\s+/)[2])).toEqual(['insertMany', 'findOne']);
    expect(redis.map((l) => l.trim().split(/\s+/)[2])).toEqual(['redis.evalsha', 'redis.set', 'redis.zadd']);
  });

  it('counts each row as the difference of the snapshots per call, busiest first', () => {
    expect(lines.find((l) => l.includes('insertMany'))).toMatch(/^\s+4\.00\s+worker/);
    expect(lines.find((l) => l.includes('findOne'))).toMatch(/^\s+2\.00\s+worker/);
    expect(lines.find((l) => l.includes('redis.set'))).toMatch(/^\s+3\.00\s+worker/);
    expect(lines.find((l) => l.includes('(pipelined)'))).toMatch(/^\s+1\.00\s+worker/);
  });
});
