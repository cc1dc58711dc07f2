-- forget: removes retired subjects from Redis once their proofs are held elsewhere (the
-- proof archive, the webhooks) or, retired lean, once the anchor log and their batches
-- rebuild them (docs/reliability.md, Retention; src/adapters/log/retired-facts.ts). Only a subject whose overall status is
-- confirmed is removed; anything else is left as it is. A removed subject leaves its index
-- (a confirmed subject is in idx:st:confirmed only, every witness of it confirmed)
-- and the counts (so /v1/stats, the list and the metrics count what Redis holds); its
-- hash (its history in it), envelope and own Nostr event (envelope mode, with its place in nostr:recent) go,
-- and the meta counter `retired` counts it. Batches are shared by many subjects: each of the
-- subject's batches counts it in its `gone` field, and a batch whose `gone` reaches its
-- `size` (none of its subjects is left) joins bfree:<witness>, from which drop-batch.lua
-- removes it; until then its digests are the other subjects' proofs and stay. A subject
-- retired lean leaves its log:idx value as `<index>:<facts>` (given by the caller, taken only
-- while the value is still its bare `<index>` and it has no own event) and counts in each of
-- its batches' `lean` field too: drop-batch.lua keeps such a batch's hash and event, which
-- its retired subjects' proofs are rebuilt from.
--
-- KEYS[1] counts, [2..6] idx:st:pending, partial, confirmed, failed, rejected, [7] meta,
-- [8] events stream, [9] nostr:recent, [10] bfree:nostr, [11] bfree:ots, [12] log:idx (the
-- meta key again with the log off), then per subject 5
-- keys: subject hash, envelope, its own Nostr event hash, its Nostr batch hash, its
-- OTS batch hash (the subject hash again for each it has none of), then last the stream's
-- tally (stream-lib.lua).
-- ARGV[1] now (ISO), [2] stream MAXLEN, [3] the witnesses a subject may have (comma list: a
-- subject's witnesses are the w:<witness> fields it has), then per subject 5: key, its own
-- event id, its Nostr batch id, its OTS batch id ('' for none), as the caller read them (the
-- event id as stored: its 32 bytes), and its lean log:idx value ('' unless retired lean).
-- The stream takes one entry for the call's subjects removed: the one-subject form
-- {type = 'retired', key, status, at}, or {type = 'retired', status, at, keys = [...]} for
-- more (src/adapters/state/stream-entries.ts expands it), added through add_events (stream-lib.lua; the last key is the stream's tally).
-- Returns per subject 1 (removed) or 0 (not confirmed, gone already, or its event or batch
-- links changed since they were read: left alone).
local PER_KEYS, PER_ARGS, FIXED, FIXED_ARGS = 5, 5, 12, 3
local n = (#ARGV - FIXED_ARGS) / PER_ARGS
if n ~= math.floor(n) or n < 1 or #KEYS ~= FIXED + PER_KEYS * n + 1 then
  return redis.error_reply('forget: ' .. #KEYS .. ' keys and ' .. #ARGV .. ' arguments do not describe whole subjects')
end
local nowIso, maxlen = ARGV[1], ARGV[2]
local known = {}
for w in string.gmatch(ARGV[3], '[^,]+') do table.insert(known, w) end
local knownFields = {}
for _, w in ipairs(known) do table.insert(knownFields, 'w:' .. w) end
local out, removed, counts, batches, order = {}, {}, {}, {}, {}
for i = 0, n - 1 do
  local a = FIXED_ARGS + 1 + PER_ARGS * i
  local key, eventId, nostrBatch, otsBatch, lean = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local k = FIXED + PER_KEYS * i
  local s, e, ev = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local cur = redis.call('HMGET', s, 'status', 'nostr:event', 'nostr:batch', 'ots:batch', unpack(knownFields))
  local ok = cur[1] == 'confirmed' and (cur[2] or '') == eventId and (cur[3] or '') == nostrBatch and (cur[4] or '') == otsBatch
  if ok and lean ~= '' then
    local colon = string.find(lean, ':', 1, true)
    ok = eventId == '' and colon ~= nil and redis.call('HGET', KEYS[12], key) == string.sub(lean, 1, colon - 1)
  end
  if ok then
    table.insert(removed, key)
    if lean ~= '' then redis.call('HSET', KEYS[12], key, lean) end
    for j, w in ipairs(known) do
      if cur[4 + j] then
        local f = 'w:' .. w .. ':confirmed'
        counts[f] = (counts[f] or 0) + 1
      end
    end
    if ev ~= s then
      redis.call('DEL', ev)
      -- nostr:recent holds the id as hex
      redis.call('ZREM', KEYS[9], (string.gsub(eventId, '.', function(c) return string.format('%02x', string.byte(c)) end)))
    end
    -- one fewer of each of its batches' subjects left in Redis (counted once per batch below)
    for j, id in ipairs({nostrBatch, otsBatch}) do
      if id ~= '' then
        local b = KEYS[k + 3 + j]
        local t = batches[b]
        if not t then
          t = {id = id, free = KEYS[9 + j], n = 0, lean = 0}
          batches[b] = t
          table.insert(order, b)
        end
        t.n = t.n + 1
        if lean ~= '' then t.lean = t.lean + 1 end
      end
    end
    redis.call('DEL', s, e)
    table.insert(out, 1)
  else
    table.insert(out, 0)
  end
end
if #removed > 0 then
  local data
  if #removed == 1 then
    data = {type = 'retired', key = removed[1], status = 'confirmed', at = nowIso}
  else
    data = {type = 'retired', status = 'confirmed', at = nowIso, keys = removed}
  end
  add_events(KEYS[8], KEYS[#KEYS], maxlen, #removed, cjson.encode(data))
  redis.call('ZREM', KEYS[4], unpack(removed))
  redis.call('HINCRBY', KEYS[1], 'st:confirmed', -#removed)
  for f, c in pairs(counts) do redis.call('HINCRBY', KEYS[1], f, -c) end
  redis.call('HINCRBY', KEYS[7], 'retired', #removed)
end
for _, b in ipairs(order) do
  local t = batches[b]
  if redis.call('EXISTS', b) == 1 then
    if t.lean > 0 then redis.call('HINCRBY', b, 'lean', t.lean) end
    local gone = redis.call('HINCRBY', b, 'gone', t.n)
    if gone >= tonumber(redis.call('HGET', b, 'size') or '0') then redis.call('SADD', t.free, t.id) end
  end
end
return out
