-- Writes a firm's sealed webhook keys unless the copy held is from a later version of the firm
-- (a reader's copy that arrives after a change's own). Returns 1 when written, 0 when not.
--! KEYS: copy
--! ARGV: value version
local held = redis.call('HGET', KEYS[1], 'version')
if held and tonumber(held) > tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], 'value', ARGV[1], 'version', ARGV[2])
return 1
