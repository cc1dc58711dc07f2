-- cut-checkpoint: with the anchor log on (docs/log.md, "Witnessing checkpoints"), cuts the
-- next batch of a witness from the log instead of its inbox: the subjects whose entries lie
-- in [from, to), where `from` is where the witness's last checkpoint cut stopped (its
-- cursor) and `to` is the size of a signed checkpoint. The batch's root is that checkpoint's
-- root: the batch keeps the signed note and its size, never its subjects' digests. Each
-- subject is linked to the batch with its log index as its place (`<w>:i`). The caller reads
-- the entries from the log's files (immutable once a checkpoint covers them) and proposes the
-- cut; nothing is written when the cursor or the batch sequence moved (another cut landed).
-- A subject is taken only when it is still in Redis with the entry's digest, has this
-- witness, is in no batch of it, and (Nostr) has no event of its own; the cursor moves to
-- `to` in any case, so a range is cut once.
--
-- KEYS[1] the witness's cut cursor, [2] batch sequence, [3] open-batch set, [4] batch hash,
-- [5] batch key list, then the subject hash of each entry, in order.
-- ARGV[1] witness, [2] now (ms), [3] now (ISO), [4] batch id, [5] the sequence number it
-- takes, [6] from, [7] to, [8] the signed checkpoint note of size `to`, then per entry 3:
-- key, digest (32 bytes), log index.
-- Returns {'retry'} when the proposal is stale, false when no entry's subject was taken (the
-- cursor moved), else {id, size}.
local w, now, nowIso, id, seq = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local from, to, note = tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
local n = (#ARGV - 8) / 3
if n ~= math.floor(n) or #KEYS ~= 5 + n or to <= from then return redis.error_reply('cut-checkpoint: ' .. #KEYS .. ' keys and ' .. #ARGV .. ' arguments do not describe a range of entries') end
if tonumber(redis.call('GET', KEYS[1]) or '0') ~= from then return {'retry'} end
if tonumber(redis.call('GET', KEYS[2]) or '0') + 1 ~= seq then return {'retry'} end
local live, livePos, liveIdx = {}, {}, {}
for i = 1, n do
  local a = 9 + 3 * (i - 1)
  local h = redis.call('HMGET', KEYS[5 + i], 'digest', w .. ':batch', 'w:' .. w, 'nostr:event')
  if h[1] == ARGV[a + 1] and not h[2] and h[3] and (w ~= 'nostr' or not h[4]) then
    table.insert(live, ARGV[a])
    table.insert(livePos, 5 + i)
    table.insert(liveIdx, ARGV[a + 2])
  end
end
redis.call('SET', KEYS[1], to)
if #live == 0 then return false end
redis.call('INCR', KEYS[2])
if redis.call('EXISTS', KEYS[4]) == 1 then return redis.error_reply('batch id ' .. id .. ' already exists') end
redis.call('HSET', KEYS[4], 'size', #live, 'created', now, 'anchored_at', nowIso, 'cp', to, 'note', note)
for i = 1, #live, 1000 do
  redis.call('RPUSH', KEYS[5], unpack(live, i, math.min(i + 999, #live)))
end
for i, pos in ipairs(livePos) do
  redis.call('HSET', KEYS[pos], w .. ':batch', id, w .. ':i', liveIdx[i])
end
redis.call('SADD', KEYS[3], id)
return {id, #live}
