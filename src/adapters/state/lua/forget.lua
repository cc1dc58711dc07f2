-- forget: removes every trace of the given subjects from the state (retention: a confirmed
-- subject whose proof is archived): its hash, envelope, history, its own Nostr event (an
-- event owned by the subject, never a batch's), its index memberships and its share of the
-- counts. Batches keep their digests and key lists (the proofs of the other subjects in them
-- need the digests; a key listed whose subject is gone is skipped by every reader). An inbox
-- entry left behind is dropped by the next cut (no digest). The caller reads each subject's
-- event id first and passes it; a subject whose event id changed since is skipped.
--
-- KEYS[1] counts, [2..6] idx:st:pending, partial, confirmed, failed, rejected, [7] nostr:recent,
-- then per witness in ARGV[1] (comma list) its idx:w:<w>:pending, partial, failed; then per
-- subject 4 keys: subject hash, envelope, history, its event hash (the subject hash again
-- when it has none). ARGV[1] witnesses, then per subject 2: key, event id ('' for none).
-- Returns per subject 1 (forgotten), 0 (not there) or -1 (its event changed: read again).
local ws = {}
for w in string.gmatch(ARGV[1], '[^,]+') do table.insert(ws, w) end
local WST = {pending = 0, partial = 1, failed = 2}
local ST = {pending = 2, partial = 3, confirmed = 4, failed = 5, rejected = 6}
local kbase = 7 + 3 * #ws
local n = (#ARGV - 1) / 2
if n ~= math.floor(n) or #KEYS ~= kbase + 4 * n then
  return redis.error_reply('forget: ' .. #KEYS .. ' keys and ' .. #ARGV .. ' arguments do not describe whole subjects')
end
local out = {}
for i = 0, n - 1 do
  local key, eventId = ARGV[2 + 2 * i], ARGV[3 + 2 * i]
  local s, e, h, ev = KEYS[kbase + 4 * i + 1], KEYS[kbase + 4 * i + 2], KEYS[kbase + 4 * i + 3], KEYS[kbase + 4 * i + 4]
  local cur = redis.call('HMGET', s, 'status', 'nostr:event')
  if not cur[1] then
    table.insert(out, 0)
  elseif (cur[2] or '') ~= eventId then
    table.insert(out, -1)
  else
    local st = cur[1]
    if ST[st] then
      redis.call('ZREM', KEYS[ST[st]], key)
      redis.call('HINCRBY', KEYS[1], 'st:' .. st, -1)
    end
    for wi, w in ipairs(ws) do
      local wst = redis.call('HGET', s, 'w:' .. w)
      if wst then
        if WST[wst] then redis.call('ZREM', KEYS[7 + 3 * (wi - 1) + WST[wst] + 1], key) end
        redis.call('HINCRBY', KEYS[1], 'w:' .. w .. ':' .. wst, -1)
      end
    end
    if eventId ~= '' and redis.call('HGET', ev, 'subject') == key then
      redis.call('DEL', ev)
      redis.call('ZREM', KEYS[7], eventId)
    end
    redis.call('DEL', s, e, h)
    table.insert(out, 1)
  end
end
return out
