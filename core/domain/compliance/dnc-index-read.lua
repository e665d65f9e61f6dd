-- The request stage's read of a firm's do-not-call index (dnc-index.ts) in one step:
-- {1 when the index is ready else 0, 1 when the number is in the set else 0}.
--! KEYS: ready listed
--! ARGV: phone
return { redis.call('EXISTS', KEYS[1]), redis.call('SISMEMBER', KEYS[2], ARGV[1]) }
