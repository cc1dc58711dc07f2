-- A subject's own history entries live in its hash, field `h:<n>` for entry n (0, 1, ...):
-- a witness transition compactly (witness_entry), anything else (a refusal, a conflict, an
-- acceptance after refusals) as its JSON. SubjectStore.history reads both (history-entries.ts).
-- `n`: the next entry's number when the caller knows it (history_next), else it is counted.
local function add_history(s, value, n)
  if not n then
    n = 0
    for _, f in ipairs(redis.call('HKEYS', s)) do
      if string.sub(f, 1, 2) == 'h:' then n = n + 1 end
    end
  end
  redis.call('HSET', s, 'h:' .. n, value)
end
-- The fields a caller adds to its HMGET of the hash to learn the next entry's number without
-- another call (history_next): most subjects have far fewer entries.
local HISTORY_PROBE = {'h:0', 'h:1', 'h:2', 'h:3', 'h:4', 'h:5', 'h:6', 'h:7'}
-- The next entry's number from the probe's values (HMGET reply, probe from `at`), or nil
-- when every probed entry is there (add_history counts them).
local function history_next(values, at)
  for j = 1, #HISTORY_PROBE do
    if not values[at + j - 1] then return j - 1 end
  end
  return nil
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
