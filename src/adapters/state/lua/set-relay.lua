-- set-relay: records one relay's report on a Nostr event unless it would downgrade it: a
-- report of accepted or stored is kept against anything but stored, and stored is final.
--
-- KEYS[1] event hash. ARGV[1] relay URL, [2] report JSON, [3] the report's status.
-- Returns the event's relay reports as a flat list {url, json, ...}.
local ev = KEYS[1]
local field, report, newStatus = 'r:' .. ARGV[1], ARGV[2], ARGV[3]
local old = redis.call('HGET', ev, field)
local keep = false
if old then
  local o = cjson.decode(old)
  if (o.status == 'accepted' or o.status == 'stored') and newStatus ~= 'stored' then keep = true end
  if o.status == 'stored' then keep = true end
end
if not keep then redis.call('HSET', ev, field, report) end
local all = redis.call('HGETALL', ev)
local out = {}
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'r:' then
    table.insert(out, string.sub(all[i], 3))
    table.insert(out, all[i + 1])
  end
end
return out
