-- outbox-add: hands events to the relays' outboxes, each relay only the events it has not
-- answered for good, and records on each event the relays it was handed to (its `to` field,
-- their registry numbers joined by `,` in the order handed, each relay once). Already queued
-- events keep their due time (ZADD NX).
--
-- KEYS[1..R] the relays' outboxes, then the event hashes. ARGV[1] R, [2] now (ms), then the
-- R relays' registry numbers, then the event ids (in KEYS order).
-- Returns how many (event, relay) pairs were queued.
local r, now = tonumber(ARGV[1]), ARGV[2]
local nums = {}
for i = 1, r do nums[i] = ARGV[2 + i] end
local fields = {'to'}
for i = 1, r do fields[i + 1] = 'r:' .. nums[i] end
local adds = {}
for i = 1, r do adds[i] = {} end
local queued = 0
for e = r + 1, #KEYS do
  local id = ARGV[2 + r + (e - r)]
  local cur = redis.call('HMGET', KEYS[e], unpack(fields))
  local list = {}
  local seen = {}
  if cur[1] then
    for n in string.gmatch(cur[1], '[^,]+') do table.insert(list, n); seen[n] = true end
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
  if grew then redis.call('HSET', KEYS[e], 'to', table.concat(list, ',')) end
end
for i = 1, r do
  if #adds[i] > 0 then redis.call('ZADD', KEYS[i], 'NX', unpack(adds[i])) end
end
return queued
