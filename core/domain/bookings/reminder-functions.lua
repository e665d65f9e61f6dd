-- Functions the booking-reminder scripts share (put before each of them by the loader: Redis
-- has no `require`). A booking's hash: field 'booking' (its JSON) and one 'r|...' field per
-- reminder (its JSON); see reminder-records.ts.

local function each_reminder(key, fn)
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 'r|' then fn(all[i], cjson.decode(all[i + 1])) end
  end
end

-- The member of a reminder in the firm's ZSET of reminders to come (redis-keys.ts:
-- firmRemindersDue): short and the same for the same booking and field.
local function due_member(key, field)
  return string.sub(redis.sha1hex(key .. '|' .. field), 1, 24)
end

-- Cancels one reminder unless sent: a reminder being sent cannot be stopped, it is only kept
-- from being retried. A cancelled one no longer counts against the firm (due_key). Returns 1
-- when it changed it.
local function cancel_one(key, field, r, now, due_key)
  if r.status == 'scheduled' then
    r.status = 'cancelled'
    r.cancelled_at = now
    redis.call('HSET', key, field, cjson.encode(r))
    redis.call('ZREM', due_key, due_member(key, field))
    return 1
  elseif r.status == 'sending' and not r.cancel_requested then
    r.cancel_requested = true
    redis.call('HSET', key, field, cjson.encode(r))
    return 1
  end
  return 0
end

-- Cancels what has not been sent (but those whose field starts with keep).
local function cancel_pending(key, now, keep, due_key)
  local n = 0
  each_reminder(key, function(field, r)
    if keep and string.sub(field, 1, #keep) == keep then return end
    n = n + cancel_one(key, field, r, now, due_key)
  end)
  return n
end

-- The booking's "Name <email>, ..." line rebuilt from its people (seats joined or left).
local function people_line(people)
  local labels = {}
  for _, p in ipairs(people) do table.insert(labels, p.label) end
  return string.sub(table.concat(labels, ', '), 1, 2000)
end

local function extend_expiry(key, now, expire_at)
  local ttl = redis.call('PTTL', key)
  if ttl < 0 or now + ttl < expire_at then redis.call('PEXPIREAT', key, expire_at) end
end
