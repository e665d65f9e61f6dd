-- Removes the import's entry: the member `<import id>:<bytes>` (its size is not known to every
-- caller), or `<import id>` as entries were written before they carried their size. Returns how
-- many were removed (0 when it was not held: released already, lapsed, or never taken).
--! KEYS: pending
--! ARGV: import_id
local id = ARGV[1]
local removed = 0
for _, member in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if member == id or string.sub(member, 1, #id + 1) == id .. ':' then
    removed = removed + redis.call('ZREM', KEYS[1], member)
  end
end
return removed
