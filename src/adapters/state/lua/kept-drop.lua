-- kept-drop: takes events retention forgot out of relay upkeep's walk (kept-lib.lua has its
-- layout): each slot that still holds its id is cleared (32 zero bytes), and a chunk left
-- with no id goes (from the walk and from its chunks). A position that does not hold the id
-- given is left as it is.
--
-- KEYS[1] the walk, KEYS[2] its chunks.
-- ARGV[1] ids per chunk, then pairs: a position, the id there (32 bytes).
-- Returns how many slots were cleared.
local per = tonumber(ARGV[1])
if not per or per < 1 or #ARGV % 2 ~= 1 then return redis.error_reply('kept-drop: ' .. (#ARGV - 1) .. ' arguments after the chunk size ' .. tostring(ARGV[1]) .. ', not position and id pairs') end
local zero = string.rep('\0', 32)
local chunks, changed, order = {}, {}, {}
local cleared = 0
for i = 2, #ARGV, 2 do
  local p, id = tonumber(ARGV[i]), ARGV[i + 1]
  if p and p >= 0 and p == math.floor(p) and #id == 32 then
    local c = math.floor(p / per)
    local s = chunks[c]
    if s == nil then
      s = redis.call('HGET', KEYS[1], string.format('%d', c))
      chunks[c] = s
      table.insert(order, c)
    end
    if s then
      local at = (p - c * per) * 32 + 1
      if string.sub(s, at, at + 31) == id then
        chunks[c] = string.sub(s, 1, at - 1) .. zero .. string.sub(s, at + 32)
        changed[c] = true
        cleared = cleared + 1
      end
    end
  end
end
if cleared == 0 then return 0 end
for _, c in ipairs(order) do
  if changed[c] then
    local s, field = chunks[c], string.format('%d', c)
    if s == string.rep('\0', #s) then
      redis.call('HDEL', KEYS[1], field)
      redis.call('ZREM', KEYS[2], field)
    else
      redis.call('HSET', KEYS[1], field, s)
    end
  end
end
redis.call('HINCRBY', KEYS[1], 'n', -cleared)
return cleared
