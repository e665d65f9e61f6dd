-- Stores a booking and its reminders (field/record pairs after the named arguments), unless the
-- booking is not active (the cancel wins), is stored for this start already (a repeat changes
-- nothing) or was set by a later event ('stale'); a newer event with another start cancels the
-- reminders of the old one ('moved'). Returns {outcome, refused, field, due, field, due, ...}:
-- the reminders of this start still to send (on a repeat too, so a retried job re-adds any send job
-- it did not add). For the same start, attendees not on the booking yet join it (a new seat,
-- 'joined'): their reminders are added, those already stored are left as they are (a repeat
-- changes nothing, the firm's are not doubled), and one who left by a later event stays out;
-- a booking holds at most `max_people` attendees, later seats get no reminders.
--
-- The firm's reminders to come are counted in `due` (a ZSET by due time): a new reminder is
-- stored only while the firm has fewer than `max_due`; those past it are not stored (`refused`).
--! KEYS: booking due
--! ARGV: booking_json start_at event_at now expire_at max_due max_people ...field_record_pairs
local key, due_key = KEYS[1], KEYS[2]
local start_at, event_at = tonumber(ARGV[2]), tonumber(ARGV[3])
local now, expire_at = tonumber(ARGV[4]), tonumber(ARGV[5])
local max_people = tonumber(ARGV[7])
local current = 'r|' .. ARGV[2] .. '|'
local outcome = 'stored'
local PAIRS = 8
redis.call('ZREMRANGEBYSCORE', due_key, '-inf', now)
local room = tonumber(ARGV[6]) - redis.call('ZCARD', due_key)
local refused = 0
-- Stores one reminder if the firm has room for it.
local function add(field, record, due_at)
  if room <= 0 then
    refused = refused + 1
    return
  end
  redis.call('HSET', key, field, record)
  redis.call('ZADD', due_key, due_at, due_member(key, field))
  room = room - 1
end
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
    cancel_pending(key, now, current, due_key)
  end
end
if outcome ~= 'unchanged' then
  redis.call('HSET', key, 'booking', ARGV[1])
  for i = PAIRS, #ARGV, 2 do
    local existing = redis.call('HGET', key, ARGV[i])
    if not existing or cjson.decode(existing).status == 'cancelled' then
      add(ARGV[i], ARGV[i + 1], cjson.decode(ARGV[i + 1]).due_at)
    end
  end
else
  local left = type(b.left) == 'table' and b.left or {}
  -- Out: left by an event not older than this one.
  local out = function(email) return left[email] ~= nil and left[email] >= event_at end
  local nb = cjson.decode(ARGV[1])
  if type(b.people) ~= 'table' then b.people = {} end
  -- No one on it: the firm's reminders wait for a seat (those cancelled when the last one left too).
  local was_empty = #b.people == 0
  local on = {}
  for _, p in ipairs(b.people) do on[p.email] = true end
  local joined, new = 0, {}
  for _, p in ipairs(type(nb.people) == 'table' and nb.people or {}) do
    if not on[p.email] and not out(p.email) and #b.people < max_people then
      table.insert(b.people, p)
      on[p.email] = true
      new[p.email] = true
      left[p.email] = nil
      joined = joined + 1
    end
  end
  for i = PAIRS, #ARGV, 2 do
    local r = cjson.decode(ARGV[i + 1])
    local existing = redis.call('HGET', key, ARGV[i])
    -- One who left earlier and takes a seat again gets their reminders back; so does the firm
    -- when a seat comes to a booking its last seat had left.
    local rejoin = existing and cjson.decode(existing).status == 'cancelled'
      and ((r.role == 'attendee' and new[r.to]) or (r.role ~= 'attendee' and was_empty and joined > 0))
    -- An attendee not on the booking (a seat past max_people) gets none; the firm's come with the
    -- first one on it (a booking first seen by a seat's cancel has no one yet).
    local seated = (r.role ~= 'attendee' and #b.people > 0) or on[r.to]
    if seated and ((not existing and not (r.role == 'attendee' and out(r.to))) or rejoin) then
      add(ARGV[i], ARGV[i + 1], r.due_at)
    end
  end
  if joined > 0 then
    outcome = 'joined'
    b.left = left
    b.attendees = people_line(b.people)
    if nb.seated then b.seated = true end
    -- A booking first seen by a seat's reschedule knows its time, not its place: its seats tell.
    if b.location == nil then b.location = nb.location end
    if b.join_url == nil then b.join_url = nb.join_url end
    redis.call('HSET', key, 'booking', cjson.encode(b))
  end
end
extend_expiry(key, now, expire_at)
local last = redis.call('ZRANGE', due_key, -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIREAT', due_key, tonumber(last[2]) + 86400000) end
local due = {outcome, refused}
each_reminder(key, function(field, r)
  if r.status == 'scheduled' and string.sub(field, 1, #current) == current then
    table.insert(due, field)
    table.insert(due, string.format('%.0f', r.due_at))
  end
end)
return due
