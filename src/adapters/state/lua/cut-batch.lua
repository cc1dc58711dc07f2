-- cut-batch: moves the subject keys at the head of a witness's inbox into a new batch (their
-- digests in order) and links each subject to it. Every key it touches is declared, so the
-- caller reads the inbox head and the batch sequence first and proposes the cut: the keys,
-- the sequence number the batch takes and so its id. When another cut got there first (the
-- head or the sequence moved), nothing is written and the caller reads again.
-- The id is the sequence number and the caller's random nonce: a Redis that loses its last
-- writes rolls the sequence back, and calendars, relays and in-flight jobs may still hold
-- the lost batch's id, so the sequence alone must never name a batch twice.
-- The batch keeps its digests as 32 bytes each (as the subject hashes keep them),
-- concatenated, in `digests32`.
-- Subjects already in a batch of this witness (put back by the reconciler) are skipped.
--
-- KEYS[1] inbox, [2] batch sequence, [3] open-batch set, [4] batch hash, [5] batch key list,
-- then the subject hash of each proposed key, in order.
-- ARGV[1] witness, [2] now (ms), [3] now (ISO), [4] batch id, [5] the sequence number it
-- takes, then the proposed subject keys (the inbox head, in order).
-- Returns {'retry'} when the proposal is stale, false when no proposed subject was live
-- (the keys are dropped from the inbox), else {id, size}.
local w, now, nowIso, id, seq = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local n = #ARGV - 5
if n < 1 or #KEYS ~= 5 + n then return redis.error_reply('cut-batch: ' .. #KEYS .. ' keys for ' .. n .. ' proposed subjects') end
local head = redis.call('LRANGE', KEYS[1], 0, n - 1)
if #head ~= n then return {'retry'} end
for i = 1, n do
  if head[i] ~= ARGV[5 + i] then return {'retry'} end
end
if tonumber(redis.call('GET', KEYS[2]) or '0') + 1 ~= seq then return {'retry'} end
redis.call('LTRIM', KEYS[1], n, -1)
local live, livePos, digests = {}, {}, {}
for i = 1, n do
  local s = KEYS[5 + i]
  -- one read per subject: its digest, and whether a batch of this witness holds it already
  local cur = redis.call('HMGET', s, 'digest', w .. ':batch')
  local d = cur[1]
  if d and not cur[2] then
    table.insert(live, ARGV[5 + i])
    table.insert(livePos, 5 + i)
    table.insert(digests, d)
  end
end
if #live == 0 then return false end
redis.call('INCR', KEYS[2])
if redis.call('EXISTS', KEYS[4]) == 1 then return redis.error_reply('batch id ' .. id .. ' already exists') end
redis.call('HSET', KEYS[4], 'size', #live, 'created', now, 'anchored_at', nowIso, 'digests32', table.concat(digests))
for i = 1, #live, 1000 do
  local chunk = {}
  for j = i, math.min(i + 999, #live) do table.insert(chunk, live[j]) end
  redis.call('RPUSH', KEYS[5], unpack(chunk))
end
for i, pos in ipairs(livePos) do
  redis.call('HSET', KEYS[pos], w .. ':batch', id, w .. ':i', i - 1)
end
redis.call('SADD', KEYS[3], id)
return {id, #live}
