-- set-relays: records one relay's reports on many events in one call, never downgrading one (a
-- report of accepted or stored is kept against anything but stored, and stored is final), and
-- returns what the caller needs to move the witnesses without reading again.
--
-- KEYS: the event hashes. ARGV[1] relay URL, then per event 2: the report JSON, its status.
-- Returns per event {subject, batch, previous report JSON, every report JSON joined by "\n"}
-- ('' for what is absent); an event hash that is gone gives four ''.
local field = 'r:' .. ARGV[1]
local out = {}
for i, ev in ipairs(KEYS) do
  local report, newStatus = ARGV[2 * i], ARGV[2 * i + 1]
  local all = redis.call('HGETALL', ev)
  if #all == 0 then
    for _ = 1, 4 do table.insert(out, '') end
  else
    local subject, batch, old = '', '', nil
    local reports = {}
    for j = 1, #all, 2 do
      local f = all[j]
      if f == 'subject' then subject = all[j + 1]
      elseif f == 'batch' then batch = all[j + 1]
      elseif f == field then old = all[j + 1]
      elseif string.sub(f, 1, 2) == 'r:' then table.insert(reports, all[j + 1]) end
    end
    local keep = false
    if old then
      local o = cjson.decode(old)
      if (o.status == 'accepted' or o.status == 'stored') and newStatus ~= 'stored' then keep = true end
      if o.status == 'stored' then keep = true end
    end
    if keep then table.insert(reports, old) else
      redis.call('HSET', ev, field, report)
      table.insert(reports, report)
    end
    table.insert(out, subject); table.insert(out, batch); table.insert(out, old or '')
    table.insert(out, table.concat(reports, '\n'))
  end
end
return out
