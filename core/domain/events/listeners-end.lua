-- A change to what listens to a firm's events has ended (its write done, or failed): the epoch
-- moves, then the writer's mark goes. Returns the new epoch.
--! KEYS: changing epoch
--! ARGV: token
local epoch = redis.call('INCR', KEYS[2])
redis.call('ZREM', KEYS[1], ARGV[1])
return epoch
