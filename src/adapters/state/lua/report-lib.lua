-- A relay report as event hashes keep it (src/adapters/state/relay-reports.ts): `|`-joined,
-- status first (`a` accepted, `s` stored, ...), then final (`1` final), trailing empties left off.
local function report_status(v)
  local st = string.match(v, '^([^|]*)')
  if st == 'a' then return 'accepted' elseif st == 's' then return 'stored' end
  return st
end
local function report_final(v)
  return string.match(v, '^[^|]*|([^|]*)') == '1'
end
