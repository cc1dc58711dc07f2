-- register: the numbers of values in one namespace of the registry (keys.ts, nostrRegistry),
-- a value not there yet given the next number (its namespace's `<ns>#` counter). A number is
-- never reused or changed, so callers may keep what they were told.
--
-- KEYS[1] the registry. ARGV[1] the namespace (`u` relays, `s` signers), then the values.
-- Returns their numbers, in order.
local reg, ns = KEYS[1], ARGV[1]
local out = {}
for i = 2, #ARGV do
  local f = ns .. ':' .. ARGV[i]
  local n = redis.call('HGET', reg, f)
  if not n then
    n = redis.call('HINCRBY', reg, ns .. '#', 1)
    redis.call('HSET', reg, f, n, ns .. '#' .. n, ARGV[i])
  end
  table.insert(out, tonumber(n))
end
return out
