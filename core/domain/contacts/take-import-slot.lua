-- Drops lapsed entries; adds the import, as the member `<import id>:<bytes>`, when the firm's
-- pending imports leave room for it: fewer than `max_count` of them, and their bytes with this
-- one's no more than `max_bytes`. An import larger than `max_bytes` by itself is let in when the
-- firm has none pending (it is never let in beside others). An entry without `:<bytes>`, as
-- entries were written before they carried their size, counts as `unknown_bytes`. The key lives
-- no longer than its last entry. Returns {'ok'|'count'|'bytes', entries, bytes held}: what was
-- pending before this import, and 'ok' when it was added, else which limit refused it.
--! KEYS: pending
--! ARGV: import_id bytes now lapse_at max_count max_bytes unknown_bytes
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
local entries = redis.call('ZRANGE', KEYS[1], 0, -1)
local held = 0
for _, member in ipairs(entries) do
  held = held + (tonumber(string.match(member, ':(%d+)$')) or tonumber(ARGV[7]))
end
if #entries >= tonumber(ARGV[5]) then return {'count', #entries, held} end
if #entries > 0 and held + tonumber(ARGV[2]) > tonumber(ARGV[6]) then return {'bytes', #entries, held} end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[1] .. ':' .. ARGV[2])
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return {'ok', #entries, held}
