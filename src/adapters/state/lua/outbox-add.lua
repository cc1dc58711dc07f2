-- outbox-add: hands events to the relays' outboxes, each relay only the events it has not
-- answered for good, and records on each event the relays it was handed to (its `to` field,
-- their registry numbers joined by `,` in the order handed, each relay once). Already queued
-- events keep their due time (ZADD NX). With relay upkeep on, an event handed to the relays
-- for the first time (no `to` yet) is put at the end of upkeep's walk (kept-lib.lua) in the
-- same call that writes its `to`, so every event with a `to` is in the walk exactly once,
-- however often it is handed over again (a retried job, the reconciler). The walk is written
-- before any `to`.
--
-- KEYS[1..R] the relays' outboxes, then (relay upkeep on) the walk and its chunks, then the
-- event hashes. ARGV[1] R, [2] now (ms), [3] ids per chunk of the walk (0: relay upkeep off,
-- no walk keys), then the R relays' registry numbers, then the event ids (64 hex, in KEYS order).
-- Returns how many (event, relay) pairs were queued.
local r, now, per = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local w = per > 0 and 2 or 0
local first = r + w + 1
local nums = {}
for i = 1, r do nums[i] = ARGV[3 + i] end
if #ARGV - 3 - r ~= #KEYS - r - w then return redis.error_reply('outbox-add: ' .. (#KEYS - r - w) .. ' event keys for ' .. (#ARGV - 3 - r) .. ' ids') end
local fields = {'to'}
for i = 1, r do fields[i + 1] = 'r:' .. nums[i] end
local adds = {}
for i = 1, r do adds[i] = {} end
local queued = 0
-- each event's new `to` (by key, in the order first met), and the ids new to the walk
local tos, order, fresh = {}, {}, {}
for e = first, #KEYS do
  local id = ARGV[3 + r + (e - first + 1)]
  local cur = redis.call('HMGET', KEYS[e], unpack(fields))
  -- an event twice in one call: its first `to` is written below, so read it from here
  local before = tos[KEYS[e]] or cur[1]
  local list = {}
  local seen = {}
  if before then
    for n in string.gmatch(before, '[^,]+') do table.insert(list, n); seen[n] = true end
  end
  local grew = false
  for i = 1, r do
    local rep = cur[i + 1]
    if not (rep and report_final(rep)) then
      table.insert(adds[i], now)
      table.insert(adds[i], id)
      queued = queued + 1
      if not seen[nums[i]] then table.insert(list, nums[i]); seen[nums[i]] = true; grew = true end
    end
  end
  if grew then
    if not tos[KEYS[e]] then table.insert(order, KEYS[e]) end
    tos[KEYS[e]] = table.concat(list, ',')
    if not before and w > 0 then table.insert(fresh, kept_bytes(id)) end
  end
end
if w > 0 then kept_append(KEYS[r + 1], KEYS[r + 2], per, fresh) end
for _, key in ipairs(order) do redis.call('HSET', key, 'to', tos[key]) end
for i = 1, r do
  if #adds[i] > 0 then redis.call('ZADD', KEYS[i], 'NX', unpack(adds[i])) end
end
return queued
