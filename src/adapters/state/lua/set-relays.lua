-- set-relays: records one relay's reports on many events in one call, never downgrading one (a
-- report of accepted or stored is kept against anything but stored, and stored is final), and
-- returns what the caller needs to move the witnesses without reading again. Reports are
-- kept as report-lib.lua reads them, under `r:<relay number>`.
--
-- KEYS: the event hashes. ARGV[1] the relay's registry number, then per event 2: the report
-- (as kept), its status.
-- Returns per event {subject, batch, previous report ('' for none), n, then n pairs of relay
-- number and report as kept (every report after this one)}; an event hash that is gone gives
-- {'', '', '', -1}.
local field = 'r:' .. ARGV[1]
local out = {}
for i, ev in ipairs(KEYS) do
  local report, newStatus = ARGV[2 * i], ARGV[2 * i + 1]
  local all = redis.call('HGETALL', ev)
  if #all == 0 then
    table.insert(out, ''); table.insert(out, ''); table.insert(out, ''); table.insert(out, -1)
  else
    local subject, batch, old = '', '', nil
    local reports = {}
    for j = 1, #all, 2 do
      local f = all[j]
      if f == 'subject' then subject = all[j + 1]
      elseif f == 'batch' then batch = all[j + 1]
      elseif f == field then old = all[j + 1]
      elseif string.sub(f, 1, 2) == 'r:' then table.insert(reports, string.sub(f, 3)); table.insert(reports, all[j + 1]) end
    end
    local keep = false
    if old then
      local st = report_status(old)
      if (st == 'accepted' or st == 'stored') and newStatus ~= 'stored' then keep = true end
      if st == 'stored' then keep = true end
    end
    table.insert(reports, ARGV[1])
    if keep then table.insert(reports, old) else
      redis.call('HSET', ev, field, report)
      table.insert(reports, report)
    end
    table.insert(out, subject); table.insert(out, batch); table.insert(out, old or '')
    table.insert(out, #reports / 2)
    for _, x in ipairs(reports) do table.insert(out, x) end
  end
end
return out
