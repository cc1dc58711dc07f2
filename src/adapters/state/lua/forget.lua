-- forget: removes retired subjects from Redis once their proofs are held elsewhere (the
-- proof archive; docs/reliability.md, Retention). Only a subject whose overall status is
-- confirmed is removed; anything else is left as it is. A removed subject leaves its index
-- (layout 2: a confirmed subject is in idx:st:confirmed only, every witness of it confirmed)
-- and the counts (so /v1/stats, the list and the metrics count what Redis holds); its
-- envelope, history and own Nostr event (envelope mode, with its place in nostr:recent) go,
-- and the meta counter `retired` counts it. Batches are shared by many subjects and stay
-- (their digests are the other subjects' proofs).
--
-- KEYS[1] counts, [2..6] idx:st:pending, partial, confirmed, failed, rejected, [7] meta,
-- [8] events stream, [9] nostr:recent, then per subject 4 keys: subject hash, envelope,
-- history, its own Nostr event hash (the subject hash again when it has none).
-- ARGV[1] now (ISO), [2] stream MAXLEN, then per subject 2: key, its own event id ('' for none).
-- Returns per subject 1 (removed) or 0 (not confirmed, gone already, or its event changed:
-- left alone).
local n = (#ARGV - 2) / 2
if n ~= math.floor(n) or n < 1 or #KEYS ~= 9 + 4 * n then
  return redis.error_reply('forget: ' .. #KEYS .. ' keys and ' .. #ARGV .. ' arguments do not describe whole subjects')
end
local nowIso, maxlen = ARGV[1], ARGV[2]
local out, removed, counts = {}, {}, {}
for i = 0, n - 1 do
  local key, eventId = ARGV[3 + 2 * i], ARGV[4 + 2 * i]
  local k = 9 + 4 * i
  local s, e, h, ev = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local cur = redis.call('HMGET', s, 'status', 'nostr:event', 'witnesses')
  if cur[1] == 'confirmed' and (cur[2] or '') == eventId then
    table.insert(removed, key)
    for w in string.gmatch(cur[3] or '', '[^,]+') do
      local f = 'w:' .. w .. ':confirmed'
      counts[f] = (counts[f] or 0) + 1
    end
    if ev ~= s then
      redis.call('DEL', ev)
      redis.call('ZREM', KEYS[9], eventId)
    end
    redis.call('DEL', s, e, h)
    redis.call('XADD', KEYS[8], 'MAXLEN', '~', maxlen, '*', 'data',
      cjson.encode({type = 'retired', key = key, status = 'confirmed', at = nowIso}))
    table.insert(out, 1)
  else
    table.insert(out, 0)
  end
end
if #removed > 0 then
  redis.call('ZREM', KEYS[4], unpack(removed))
  redis.call('HINCRBY', KEYS[1], 'st:confirmed', -#removed)
  for f, c in pairs(counts) do redis.call('HINCRBY', KEYS[1], f, -c) end
  redis.call('HINCRBY', KEYS[7], 'retired', #removed)
end
return out
