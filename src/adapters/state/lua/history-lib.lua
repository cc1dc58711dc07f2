-- A subject's own history entries live in its hash, field `h:<n>` for entry n (0, 1, ...):
-- a witness transition compactly (witness_entry), anything else (a refusal, a conflict, an
-- acceptance after refusals) as its JSON. SubjectStore.history reads both (history-entries.ts).
local function add_history(s, value)
  local n = 0
  for _, f in ipairs(redis.call('HKEYS', s)) do
    if string.sub(f, 1, 2) == 'h:' then n = n + 1 end
  end
  redis.call('HSET', s, 'h:' .. n, value)
end
-- A witness transition as a subject's hash keeps it: `|`-joined, the seconds from the
-- subject's created second to the entry's, the witness, from, to and the overall status (the
-- usual ones in one letter), then the detail (may hold `|`; empty when there is none).
local HISTORY_SHORT = {nostr = 'n', ots = 'o', pending = 'p', partial = 'r', confirmed = 'c', failed = 'f'}
local function witness_entry(nowMs, createdMs, w, from, to, status, detail)
  local off = math.floor(tonumber(nowMs) / 1000) - math.floor(tonumber(createdMs) / 1000)
  local function s(x) return HISTORY_SHORT[x] or x end
  return off .. '|' .. s(w) .. '|' .. s(from) .. '|' .. s(to) .. '|' .. s(status) .. '|' .. (detail or '')
end
