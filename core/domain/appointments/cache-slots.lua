-- Keeps one query's slots in the firm's slot cache (a HASH: field = the query's digest, value =
-- "<expires at ms>|<slots JSON>"), within the firm's bounds: when the query is new and the hash
-- already holds `max_entries` queries, or the values would pass `max_bytes`, the firm's cache is
-- dropped first (it is a cache). The hash lives `ttl_ms` after its last write.
--! KEYS: cache
--! ARGV: field value ttl_ms max_entries max_bytes
local key = KEYS[1]
local field = ARGV[1]
local value = ARGV[2]
if string.len(value) > tonumber(ARGV[5]) then return 0 end
if redis.call('HEXISTS', key, field) == 0 then
  local bytes = string.len(value)
  local values = redis.call('HVALS', key)
  for _, v in ipairs(values) do bytes = bytes + string.len(v) end
  if #values >= tonumber(ARGV[4]) or bytes > tonumber(ARGV[5]) then redis.call('DEL', key) end
end
redis.call('HSET', key, field, value)
redis.call('PEXPIRE', key, ARGV[3])
return 1
