-- list-page: the members of one or more subject indexes (sorted sets scored by acceptance
-- time, ms) that come after a cursor in list order, (score, member) descending, up to n of
-- each index, read in one call. One call is one moment of the state: set-witness moves a
-- subject from one index to another in one script, so here it is in exactly one of them, never
-- in two and never in none (read in several round trips, a subject moving on between two
-- reads was read twice or hid the ones after it). The cursor is a position, (acceptance time,
-- key), which no status change alters, so it means the same in every index and every shard.
-- Members of one score are in byte order: Redis compares them as bytes, and Lua's `<` on
-- strings follows the server's locale (strcoll), so keys are compared byte by byte here.
-- Cost per index: the cursor's place in O(log N) (ZCOUNT; the key's own rank when the index
-- holds it at that score, else a binary search over the members of that score, one ZRANGE of
-- one rank per step), then one ZRANGE of at most n members. Nothing is written.
--
-- KEYS: the indexes.
-- ARGV[1] n, [2] the cursor's score ('' for none: from the newest), [3] the cursor's key.
-- Returns per index, flat: the number of its members after the cursor, then up to n of them,
-- newest first, as {member, score, member, score, ...}.
local n, score, key = tonumber(ARGV[1]), ARGV[2], ARGV[3]
if not n or n < 1 then return redis.error_reply('list-page: n must be a positive number, got ' .. tostring(ARGV[1])) end
local function less(a, b)
  if a == b then return false end
  local m = math.min(#a, #b)
  for i = 1, m do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
-- The number of members of `ix` after the cursor: ranks 0 .. p - 1, ascending.
local function placeOf(ix)
  if score == '' then return redis.call('ZCARD', ix) end
  local lo = redis.call('ZCOUNT', ix, '-inf', '(' .. score)
  local hi = redis.call('ZCOUNT', ix, '-inf', score)
  if lo == hi then return lo end
  local own = redis.call('ZSCORE', ix, key)
  if own and tonumber(own) == tonumber(score) then return redis.call('ZRANK', ix, key) end
  -- the first rank in [lo, hi) whose member is not below the key
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if less(redis.call('ZRANGE', ix, mid, mid)[1], key) then lo = mid + 1 else hi = mid end
  end
  return lo
end
local out = {}
for _, ix in ipairs(KEYS) do
  local p = placeOf(ix)
  local page = {}
  if p > 0 then
    local flat = redis.call('ZRANGE', ix, math.max(0, p - n), p - 1, 'WITHSCORES')
    for j = #flat - 1, 1, -2 do
      table.insert(page, flat[j]); table.insert(page, flat[j + 1])
    end
  end
  table.insert(out, p)
  table.insert(out, page)
end
return out
