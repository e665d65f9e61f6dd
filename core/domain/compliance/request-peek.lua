-- The dial gate's request stage in one step (dnc-index.ts): whether the firm's do-not-call index
-- is ready, whether the number is in it, and the number's dial attempts in the rolling window
-- (frequency.ts), and whether the firm's attempts are known to be complete (their ready mark):
-- {ready 1|0, member 1|0, {call id, score, ...}, attempts ready 1|0}. Reads only.
--! KEYS: ready listed attempts attempts_ready
--! ARGV: phone window_start
return {
  redis.call('EXISTS', KEYS[1]),
  redis.call('SISMEMBER', KEYS[2], ARGV[1]),
  redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. ARGV[2], '+inf', 'WITHSCORES'),
  redis.call('EXISTS', KEYS[4]),
}
