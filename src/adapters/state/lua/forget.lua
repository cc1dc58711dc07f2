-- forget: removes retired subjects from Redis once their proofs are held elsewhere (the
-- proof archive; docs/reliability.md, Retention). Only a subject whose overall status is
-- confirmed is removed; anything else is left as it is. A removed subject leaves every
-- index (so /v1/stats, the list and the metrics count what Redis holds), its envelope,
-- history and own Nostr event (envelope mode) go, and the meta counter `retired` counts it.
-- Batches are shared by many subjects and stay.
--
-- KEYS[1] idx:all, [2..6] idx:st:pending, partial, confirmed, failed, rejected,
-- [7..10] idx:w:nostr:pending, partial, confirmed, failed, [11..14] the same of ots,
-- [15] meta, [16] events stream, then per subject 4 keys: subject hash, envelope, history,
-- its own Nostr event hash (the subject hash again when it has none).
-- ARGV[1] now (ISO), [2] stream MAXLEN, then per subject 2: key, its own event id ('' for none).
-- Returns per subject 1 (removed) or 0 (not confirmed, gone already, or its event changed:
-- left alone).
local n = (#ARGV - 2) / 2
if n ~= math.floor(n) or n < 1 or #KEYS ~= 16 + 4 * n then
  return redis.error_reply('forget: ' .. #KEYS .. ' keys and ' .. #ARGV .. ' arguments do not describe whole subjects')
end
local nowIso, maxlen = ARGV[1], ARGV[2]
local out, removed = {}, 0
for i = 0, n - 1 do
  local key, eventId = ARGV[3 + 2 * i], ARGV[4 + 2 * i]
  local k = 16 + 4 * i
  local s, e, h, ev = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4]
  local cur = redis.call('HMGET', s, 'status', 'nostr:event')
  if cur[1] == 'confirmed' and (cur[2] or '') == eventId then
    redis.call('ZREM', KEYS[1], key)
    for j = 2, 14 do redis.call('ZREM', KEYS[j], key) end
    if ev ~= s then redis.call('DEL', ev) end
    redis.call('DEL', s, e, h)
    redis.call('XADD', KEYS[16], 'MAXLEN', '~', maxlen, '*', 'data',
      cjson.encode({type = 'retired', key = key, status = 'confirmed', at = nowIso}))
    removed = removed + 1
    table.insert(out, 1)
  else
    table.insert(out, 0)
  end
end
if removed > 0 then redis.call('HINCRBY', KEYS[15], 'retired', removed) end
return out
