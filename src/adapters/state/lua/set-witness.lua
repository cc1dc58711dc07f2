-- set-witness: moves one subject's witness to a new status. A witness moves only forward:
-- its progress number (ARGV[4]) must not fall below the stored one, so a stale report
-- cannot undo a newer one. The same status further along only adds history. The overall
-- status follows from every witness: all confirmed → confirmed, all failed → failed, any
-- partial or confirmed → partial, else pending; indexes and counts move with both (a witness
-- confirmed leaves its witness indexes: a confirmed subject is in idx:st:<status> only). A confirmation
-- counts in the minute's timeline (GET /v1/timeline): per witness and per subject, the
-- number, the summed and the longest time to confirm; the minute expires after 2 h.
--
-- KEYS[1] subject hash, [2] history, [3] events stream,
-- [4..7] idx:w:<witness>:pending, partial, confirmed, failed (of the witness in ARGV[2]),
-- [8..11] idx:st:pending, partial, confirmed, failed, [12] meta, [13] the timeline
-- minute of ARGV[5] (tl:<floor(now / 60000)>), [14] counts. KEYS[6] (confirmed) is never written.
-- ARGV[1] key, [2] witness, [3] new status, [4] progress, [5] now (ms), [6] now (ISO),
-- [7] detail ('' for none), [8] stream MAXLEN.
-- Returns {changed(0|1), overall, created}.
local ORDER = {pending = 0, partial = 1, confirmed = 2, failed = 3}
local s = KEYS[1]
local key, w, new, prog, now, nowIso, detail, maxlen = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7], ARGV[8]
if not ORDER[new] then return redis.error_reply('set-witness: unknown status ' .. tostring(new)) end
local function witnessIndex(st)
  if not ORDER[st] then error('set-witness: stored witness status ' .. tostring(st) .. ' is not one of pending, partial, confirmed, failed') end
  if st == 'confirmed' then return nil end
  return KEYS[4 + ORDER[st]]
end
local function statusIndex(st)
  if not ORDER[st] then error('set-witness: stored status ' .. tostring(st) .. ' is not one of pending, partial, confirmed, failed') end
  return KEYS[8 + ORDER[st]]
end
local cur = redis.call('HMGET', s, 'w:' .. w, 'p:' .. w, 'status', 'created', 'witnesses')
if not cur[1] then return {0, cur[3] or '', cur[4] or '0'} end
if prog < tonumber(cur[2] or '0') then return {0, cur[3], cur[4]} end
local advanced = prog > tonumber(cur[2] or '0')
redis.call('HSET', s, 'p:' .. w, prog)
local old = cur[1]
if old == new then
  -- Same status, further along (another relay, the calendars answered): history only.
  if advanced and detail ~= '' then
    redis.call('RPUSH', KEYS[2], cjson.encode({at = nowIso, event = 'witness', witness = w, from = old, to = new, status = cur[3], detail = detail}))
  end
  return {0, cur[3], cur[4]}
end
local created = cur[4]
redis.call('HSET', s, 'w:' .. w, new, 'updated', now)
local fromIndex, toIndex = witnessIndex(old), witnessIndex(new)
if fromIndex then redis.call('ZREM', fromIndex, key) end
if toIndex then redis.call('ZADD', toIndex, created, key) end
redis.call('HINCRBY', KEYS[14], 'w:' .. w .. ':' .. old, -1)
redis.call('HINCRBY', KEYS[14], 'w:' .. w .. ':' .. new, 1)
-- the last hour's timeline (GET /v1/timeline): per minute, confirmations and their time to confirm
local function tally(field)
  local tl = KEYS[13]
  local took = tonumber(now) - tonumber(created)
  -- the expiry is set when the minute's first count of a field is made, not on every count
  if redis.call('HINCRBY', tl, 'n:' .. field, 1) == 1 then redis.call('PEXPIRE', tl, 7200000) end
  redis.call('HINCRBY', tl, 't:' .. field, took)
  if took > tonumber(redis.call('HGET', tl, 'm:' .. field) or '-1') then redis.call('HSET', tl, 'm:' .. field, took) end
end
if new == 'confirmed' then
  redis.call('HSET', s, 'confirmed:' .. w, now)
  redis.call('HSET', KEYS[12], 'last_confirmed:' .. w, now)
  tally(w)
end
local n, nconf, nfail, nprog = 0, 0, 0, 0
for ww in string.gmatch(cur[5], '[^,]+') do
  n = n + 1
  local v = redis.call('HGET', s, 'w:' .. ww)
  if v == 'confirmed' then nconf = nconf + 1; nprog = nprog + 1
  elseif v == 'failed' then nfail = nfail + 1
  elseif v == 'partial' then nprog = nprog + 1 end
end
local overall = 'pending'
if nconf == n then overall = 'confirmed'
elseif nfail == n then overall = 'failed'
elseif nprog > 0 then overall = 'partial' end
local oldOverall = cur[3]
if overall ~= oldOverall then
  redis.call('HSET', s, 'status', overall)
  redis.call('ZREM', statusIndex(oldOverall), key)
  redis.call('ZADD', statusIndex(overall), created, key)
  redis.call('HINCRBY', KEYS[14], 'st:' .. oldOverall, -1)
  redis.call('HINCRBY', KEYS[14], 'st:' .. overall, 1)
  if overall == 'confirmed' then tally('subject') end
end
local entry = {at = nowIso, event = 'witness', witness = w, from = old, to = new, status = overall}
if detail ~= '' then entry.detail = detail end
local text = cjson.encode(entry)
redis.call('RPUSH', KEYS[2], text)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxlen, '*', 'data',
  cjson.encode({type = 'state', key = key, witness = w, from = old, to = new, status = overall, previous = oldOverall, at = nowIso, detail = detail}))
return {1, overall, created}
