-- The attempt (`token`) holding a reminder in `sending` extends its lease: a send still under
-- way. Returns 1, or 0 when the reminder is no longer its own.
--! KEYS: booking
--! ARGV: field token now lease_ms
local key, field, now = KEYS[1], ARGV[1], tonumber(ARGV[3])
local raw = redis.call('HGET', key, field)
if not raw then return 0 end
local r = cjson.decode(raw)
if r.status ~= 'sending' or r.token ~= ARGV[2] then return 0 end
r.lease_until = now + tonumber(ARGV[4])
redis.call('HSET', key, field, cjson.encode(r))
return 1
