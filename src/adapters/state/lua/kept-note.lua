-- kept-note: notes events handed to the relays in relay upkeep's walk (src/adapters/nostr/upkeep-state.ts),
-- each once: an event whose hash exists and is not marked `k` is put at the walk's end and
-- its hash marked `k`; one already marked (a retried job hands the same ids again) keeps its
-- place, and one with no hash (nothing to keep up) is left out. The ids are written before
-- the marks, so a script cut short can at worst leave an id noted twice (checked twice a
-- round), never one marked and not in the walk.
--
-- The walk (KEYS[1], a hash): `t` the positions used so far (the next id's position), `n` the
-- ids in it, and per chunk c (field `<c>`, c = position div ARGV[1]) the ids of positions
-- c * ARGV[1] … in order, 32 bytes each, a cleared slot 32 zero bytes. KEYS[2]: the numbers
-- of the chunks the walk holds (a sorted set, each scored by its number).
--
-- KEYS[1] the walk, KEYS[2] its chunks, then the event hash of each id, in order.
-- ARGV[1] ids per chunk, then the ids (32 bytes each), in KEYS order.
-- Returns how many ids were added to the walk.
local per = tonumber(ARGV[1])
local n = #KEYS - 2
if not per or per < 1 or #ARGV ~= 1 + n then return redis.error_reply('kept-note: ' .. #KEYS .. ' keys for ' .. (#ARGV - 1) .. ' ids, ' .. tostring(ARGV[1]) .. ' ids per chunk') end
local fresh, seen = {}, {}
for i = 1, n do
  local id = ARGV[1 + i]
  if #id ~= 32 then return redis.error_reply('kept-note: id ' .. i .. ' is ' .. #id .. ' bytes, not 32') end
  if not seen[id] then
    seen[id] = true
    local ev = KEYS[2 + i]
    if redis.call('EXISTS', ev) == 1 and redis.call('HEXISTS', ev, 'k') == 0 then table.insert(fresh, i) end
  end
end
if #fresh == 0 then return 0 end
local head = redis.call('HMGET', KEYS[1], 't', 'n')
local t, live = tonumber(head[1] or '0'), tonumber(head[2] or '0')
local j = 1
while j <= #fresh do
  local c = math.floor(t / per)
  local field = string.format('%d', c)
  local used = t - c * per
  local cur = redis.call('HGET', KEYS[1], field)
  if not cur then
    -- a new chunk, or the last one gone because every id in it was dropped: its used slots cleared
    cur = string.rep('\0', used * 32)
    redis.call('ZADD', KEYS[2], c, field)
  elseif #cur ~= used * 32 then
    return redis.error_reply('kept-note: chunk ' .. field .. ' of the walk holds ' .. #cur .. ' bytes, not ' .. (used * 32) .. ' (' .. used .. ' ids of ' .. per .. ')')
  end
  local parts = {cur}
  local k = 0
  while j <= #fresh and used + k < per do
    k = k + 1
    parts[k + 1] = ARGV[1 + fresh[j]]
    j = j + 1
  end
  t = t + k
  live = live + k
  redis.call('HSET', KEYS[1], field, table.concat(parts), 't', string.format('%d', t), 'n', string.format('%d', live))
end
for _, i in ipairs(fresh) do redis.call('HSET', KEYS[2 + i], 'k', '1') end
return #fresh
