-- kept-lib: relay upkeep's walk (src/adapters/nostr/upkeep-state.ts), put in front of
-- outbox-add, which notes each event in it the first time the event is handed to the relays.
--
-- The walk (a hash): `t` the positions used so far (the next id's position), `n` the ids in
-- it, and per chunk c (field `<c>`, c = position div `per`) the ids of positions c * per …
-- in order, 32 bytes each, a cleared slot 32 zero bytes (kept-drop.lua). Beside it, the
-- numbers of the chunks it holds (a sorted set, each scored by its number).
--
-- kept_append(walk, chunks, per, ids): puts `ids` (32 bytes each) at the walk's end, in
-- order. Errors before writing anything when the last chunk is not as long as `t` says.
local function kept_append(walk, chunks, per, ids)
  if #ids == 0 then return end
  local head = redis.call('HMGET', walk, 't', 'n')
  local t, live = tonumber(head[1] or '0'), tonumber(head[2] or '0')
  local j = 1
  while j <= #ids do
    local c = math.floor(t / per)
    local field = string.format('%d', c)
    local used = t - c * per
    local cur = redis.call('HGET', walk, field)
    if not cur then
      -- a new chunk, or the last one gone because every id in it was dropped: its used slots cleared
      cur = string.rep('\0', used * 32)
      redis.call('ZADD', chunks, c, field)
    elseif #cur ~= used * 32 then
      error('relay upkeep walk: chunk ' .. field .. ' holds ' .. #cur .. ' bytes, not ' .. (used * 32) .. ' (' .. used .. ' ids of ' .. per .. ')')
    end
    local parts = {cur}
    local k = 0
    while j <= #ids and used + k < per do
      k = k + 1
      parts[k + 1] = ids[j]
      j = j + 1
    end
    t = t + k
    live = live + k
    redis.call('HSET', walk, field, table.concat(parts), 't', string.format('%d', t), 'n', string.format('%d', live))
  end
end

-- An event id (64 lowercase hex) as its 32 bytes.
local function kept_bytes(hex)
  if #hex ~= 64 or string.find(hex, '[^0-9a-f]') then error('relay upkeep walk: event id ' .. string.sub(hex, 1, 80) .. ' is not 64 lowercase hex characters') end
  return (string.gsub(hex, '..', function(h) return string.char(tonumber(h, 16)) end))
end
