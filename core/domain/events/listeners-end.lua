-- A change to what listens to a firm's events has ended (its write done, or failed): the epoch
-- moves to `epoch` (a fresh random value: core/platform/cache-version.ts), then the writer's mark
-- goes. Returns the new epoch.
--! KEYS: changing epoch
--! ARGV: token epoch
redis.call('SET', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[1], ARGV[1])
return ARGV[2]
