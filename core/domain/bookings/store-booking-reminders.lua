-- Stores a booking and its reminders (field/record pairs after the named arguments), unless the
-- booking is not active (the cancel wins), is stored for this start already (a repeat changes
-- nothing) or was set by a later event ('stale'); a newer event with another start cancels the
-- reminders of the old one ('moved'). Returns {outcome, field, due, field, due, ...}: the
-- reminders of this start still to send (on a repeat too, so a retried job re-adds any send job
-- it did not add). For the same start, attendees not on the booking yet join it (a new seat,
-- 'joined'): their reminders are added, those already stored are left as they are (a repeat
-- changes nothing, the firm's are not doubled), and one who left by a later event stays out.
--! KEYS: booking
--! ARGV: booking_json start_at event_at now expire_at ...field_record_pairs
local key = KEYS[1]
local start_at, event_at = tonumber(ARGV[2]), tonumber(ARGV[3])
local now, expire_at = tonumber(ARGV[4]), tonumber(ARGV[5])
local current = 'r|' .. ARGV[2] .. '|'
local outcome = 'stored'
local raw = redis.call('HGET', key, 'booking')
local b
if raw then
  b = cjson.decode(raw)
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
else
  local left = type(b.left) == 'table' and b.left or {}
  -- Out: left by an event not older than this one.
  local out = function(email) return left[email] ~= nil and left[email] >= event_at end
  local nb = cjson.decode(ARGV[1])
  if type(b.people) ~= 'table' then b.people = {} end
  local on = {}
  for _, p in ipairs(b.people) do on[p.email] = true end
  local joined, new = 0, {}
  for _, p in ipairs(type(nb.people) == 'table' and nb.people or {}) do
    if not on[p.email] and not out(p.email) then
      table.insert(b.people, p)
      on[p.email] = true
      new[p.email] = true
      left[p.email] = nil
      joined = joined + 1
    end
  end
  for i = 6, #ARGV, 2 do
    local r = cjson.decode(ARGV[i + 1])
    local existing = redis.call('HGET', key, ARGV[i])
    -- One who left earlier and takes a seat again gets their reminders back.
    local rejoin = existing and r.role == 'attendee' and new[r.to]
      and cjson.decode(existing).status == 'cancelled'
    if (not existing and not (r.role == 'attendee' and out(r.to))) or rejoin then
      redis.call('HSET', key, ARGV[i], ARGV[i + 1])
    end
  end
  if joined > 0 then
    outcome = 'joined'
    b.left = left
    b.attendees = people_line(b.people)
    if nb.seated then b.seated = true end
    redis.call('HSET', key, 'booking', cjson.encode(b))
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
