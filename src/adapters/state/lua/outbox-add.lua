-- outbox-add: hands events to the relays' outboxes, each relay only the events it has not
-- answered for good, and records on each event the relays it was handed to (its `to` field, a
-- JSON list in the order handed, each relay once). Already queued events keep their due time (ZADD NX).
--
-- KEYS[1..R] the relays' outboxes, then the event hashes. ARGV[1] R, [2] now (ms), then the
-- R relay URLs, then the event ids (in KEYS order).
-- Returns how many (event, relay) pairs were queued.
local r, now = tonumber(ARGV[1]), ARGV[2]
local urls = {}
for i = 1, r do urls[i] = ARGV[2 + i] end
local fields = {'to'}
for i = 1, r do fields[i + 1] = 'r:' .. urls[i] end
local adds = {}
for i = 1, r do adds[i] = {} end
local queued = 0
for e = r + 1, #KEYS do
  local id = ARGV[2 + r + (e - r)]
  local cur = redis.call('HMGET', KEYS[e], unpack(fields))
  local list = cur[1] and cjson.decode(cur[1]) or {}
  local seen = {}
  for _, u in ipairs(list) do seen[u] = true end
  local grew = false
  for i = 1, r do
    local rep = cur[i + 1]
    local final = rep and cjson.decode(rep).final == true
    if not final then
      table.insert(adds[i], now)
      table.insert(adds[i], id)
      queued = queued + 1
      if not seen[urls[i]] then table.insert(list, urls[i]); seen[urls[i]] = true; grew = true end
    end
  end
  if grew then redis.call('HSET', KEYS[e], 'to', cjson.encode(list)) end
end
for i = 1, r do
  if #adds[i] > 0 then redis.call('ZADD', KEYS[i], 'NX', unpack(adds[i])) end
end
return queued
