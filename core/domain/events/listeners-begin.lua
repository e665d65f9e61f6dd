-- A change to what listens to a firm's events begins (an endpoint made, changed or deleted, a
-- workflow's trigger index written): the writer's token is marked, until `lapse` (ms) should the
-- writer die, and marks lapsed before `now` are dropped.
--! KEYS: changing
--! ARGV: token now lapse
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
