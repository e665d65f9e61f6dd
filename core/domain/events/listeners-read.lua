-- What a recorded event's caller reads of its firm's listeners: the change epoch (false when
-- never changed) and how many changes are under way (marks not lapsed at `now`).
--! KEYS: changing epoch
--! ARGV: now
return { redis.call('GET', KEYS[2]), redis.call('ZCOUNT', KEYS[1], ARGV[1], '+inf') }
