-- mark-sent: adds relay URLs to the event's `to` field (a JSON array, one field for all: a
-- field per relay costs Redis ~100 bytes each), skipping those already listed. Atomic, so
-- two daemons adding relays at once lose none.
--
-- KEYS[1] event hash. ARGV: the relay URLs, in the order sent.
-- Returns 1 when a URL was added, else 0.
local cur = redis.call('HGET', KEYS[1], 'to')
local list = cur and cjson.decode(cur) or {}
local seen = {}
for _, u in ipairs(list) do seen[u] = true end
local added = false
for _, u in ipairs(ARGV) do
  if not seen[u] then
    table.insert(list, u)
    seen[u] = true
    added = true
  end
end
if added then redis.call('HSET', KEYS[1], 'to', cjson.encode(list)) end
return added and 1 or 0
