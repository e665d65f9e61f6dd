-- The firm's rebuild of its dial attempts has put every recorded attempt back (frequency.ts): the
-- ready mark is set only while the rebuild's own token is still there, that is while Redis has
-- kept its data since the rebuild began (a loss meanwhile took the token with the attempts put
-- back so far). The token goes. Returns 1 when marked, 0 when not.
--! KEYS: ready rebuilding
--! ARGV: token at
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('DEL', KEYS[2])
return 1
