-- Stores a booking and its reminders (field/record pairs after the named arguments), unless the
-- booking is not active (the cancel wins), is stored for this start already (a repeat changes
-- nothing) or was set by a later event ('stale'); a newer event with another start cancels the
-- reminders of the old one ('moved'). Returns {outcome, field, due, field, due, ...}: the
-- reminders of this start still to send (on a repeat too, so a retried job re-adds any send job
-- it did not add).
--! KEYS: booking
--! ARGV: booking_json start_at event_at now expire_at ...field_record_pairs
local key = KEYS[1]
local start_at, event_at = tonumber(ARGV[2]), tonumber(ARGV[3])
local now, expire_at = tonumber(ARGV[4]), tonumber(ARGV[5])
local current = 'r|' .. ARGV[2] .. '|'
local outcome = 'stored'
local raw = redis.call('HGET', key, 'booking')
if raw then
  local b = cjson.decode(raw)
  if b.state ~= 'active' then return {b.state} end
  if b.start_at == start_at then
    outcome = 'unchanged'
  elseif event_at < b.event_at then
    return {'stale'}
  else
    outcome = 'moved'
    cancel_pending(key, now, current)
  end
end
if outcome ~= 'unchanged' then
  redis.call('HSET', key, 'booking', ARGV[1])
  for i = 6, #ARGV, 2 do
    local existing = redis.call('HGET', key, ARGV[i])
    if not existing or cjson.decode(existing).status == 'cancelled' then
      redis.call('HSET', key, ARGV[i], ARGV[i + 1])
    end
  end
end
extend_expiry(key, now, expire_at)
local due = {outcome}
each_reminder(key, function(field, r)
  if r.status == 'scheduled' and string.sub(field, 1, #current) == current then
    table.insert(due, field)
    table.insert(due, string.format('%.0f', r.due_at))
  end
end)
return due
