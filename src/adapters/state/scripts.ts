/**
 * Lua scripts: every state change that must be atomic (accept, witness transitions,
 * relay reports, batch cuts) is one script, so a crash between two writes cannot
 * leave a subject half-recorded.
 */

/** KEYS: subject, history, events. Returns {'created'} | {'duplicate', digest} | {'conflict', digest}. */
export const ACCEPT = `
local s = KEYS[1]
local key, kind, envelope, digest, fp = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local now, nowIso, base = ARGV[6], ARGV[7], ARGV[8]
local witnesses, inboxes, eventId, eventJson, maxlen = ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13]
local existing = redis.call('HMGET', s, 'status', 'fp', 'digest')
if existing[1] and existing[1] ~= 'rejected' then
  if existing[2] == fp then return {'duplicate', existing[3]} end
  return {'conflict', existing[3]}
end
if existing[1] == 'rejected' then
  redis.call('DEL', s)
  redis.call('ZREM', base .. ':idx:st:rejected', key)
end
-- Every value in the subject hash stays within 64 bytes (a listpack); the envelope lives beside it.
redis.call('SET', base .. ':e:' .. key, envelope)
redis.call('HSET', s, 'key', key, 'kind', kind, 'digest', digest, 'fp', fp,
  'status', 'pending', 'created', now, 'updated', now, 'witnesses', witnesses)
redis.call('ZADD', base .. ':idx:all', now, key)
redis.call('ZADD', base .. ':idx:st:pending', now, key)
for w in string.gmatch(witnesses, '[^,]+') do
  redis.call('HSET', s, 'w:' .. w, 'pending', 'p:' .. w, 0)
  redis.call('ZADD', base .. ':idx:w:' .. w .. ':pending', now, key)
end
for w in string.gmatch(inboxes, '[^,]+') do
  redis.call('RPUSH', base .. ':inbox:' .. w, key)
end
if eventId ~= '' then
  redis.call('HSET', base .. ':ev:' .. eventId, 'json', eventJson, 'subject', key)
  redis.call('HSET', s, 'nostr:event', eventId)
end
local entry = cjson.encode({at = nowIso, event = 'accepted', status = 'pending', digest = digest})
redis.call('RPUSH', KEYS[2], entry)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxlen, '*', 'data',
  cjson.encode({type = 'accepted', key = key, status = 'pending', at = nowIso, digest = digest}))
return {'created'}
`;

/**
 * KEYS: subject, history, events. A witness moves only forward: its progress number
 * (ARGV[4]) must not fall below the stored one, so a stale report cannot undo a newer one.
 * Returns {changed(0|1), overall, created}.
 */
export const SET_WITNESS = `
local s = KEYS[1]
local key, w, new, prog, now, nowIso, base, detail, maxlen = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
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
redis.call('ZREM', base .. ':idx:w:' .. w .. ':' .. old, key)
redis.call('ZADD', base .. ':idx:w:' .. w .. ':' .. new, created, key)
-- the last hour's timeline (GET /v1/timeline): per minute, confirmations and their time to confirm
local function tally(field)
  local tl = base .. ':tl:' .. math.floor(tonumber(now) / 60000)
  local took = tonumber(now) - tonumber(created)
  -- the expiry is set when the minute's first count of a field is made, not on every count
  if redis.call('HINCRBY', tl, 'n:' .. field, 1) == 1 then redis.call('PEXPIRE', tl, 7200000) end
  redis.call('HINCRBY', tl, 't:' .. field, took)
  if took > tonumber(redis.call('HGET', tl, 'm:' .. field) or '-1') then redis.call('HSET', tl, 'm:' .. field, took) end
end
if new == 'confirmed' then
  redis.call('HSET', s, 'confirmed:' .. w, now)
  redis.call('HSET', base .. ':meta', 'last_confirmed:' .. w, now)
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
  redis.call('ZREM', base .. ':idx:st:' .. oldOverall, key)
  redis.call('ZADD', base .. ':idx:st:' .. overall, created, key)
  if overall == 'confirmed' then tally('subject') end
end
local entry = {at = nowIso, event = 'witness', witness = w, from = old, to = new, status = overall}
if detail ~= '' then entry.detail = detail end
local text = cjson.encode(entry)
redis.call('RPUSH', KEYS[2], text)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxlen, '*', 'data',
  cjson.encode({type = 'state', key = key, witness = w, from = old, to = new, status = overall, previous = oldOverall, at = nowIso, detail = detail}))
return {1, overall, created}
`;

/**
 * KEYS: event hash. Adds the relay URLs in ARGV to the event's `to` field (a JSON array,
 * one field for all: a field per relay costs Redis ~100 bytes each), skipping those already
 * listed. Atomic, so two daemons adding relays at once lose none.
 */
export const MARK_SENT = `
local cur = redis.call('HGET', KEYS[1], 'to')
local list = cur and cjson.decode(cur) or {}
local seen = {}
for _, u in ipairs(list) do seen[u] = true end
local added = false
for _, u in ipairs(ARGV) do
  if not seen[u] then
    table.insert(list, u)
    seen[u] = true
    added = true
  end
end
if added then redis.call('HSET', KEYS[1], 'to', cjson.encode(list)) end
return added and 1 or 0
`;

/**
 * KEYS: event hash. Records one relay's report unless it would downgrade an accepted or
 * stored relay. Returns the event's relay reports as a flat list {url, json, ...}.
 */
export const SET_RELAY = `
local ev = KEYS[1]
local field, report, newStatus = 'r:' .. ARGV[1], ARGV[2], ARGV[3]
local old = redis.call('HGET', ev, field)
local keep = false
if old then
  local o = cjson.decode(old)
  if (o.status == 'accepted' or o.status == 'stored') and newStatus ~= 'stored' then keep = true end
  if o.status == 'stored' then keep = true end
end
if not keep then redis.call('HSET', ev, field, report) end
local all = redis.call('HGETALL', ev)
local out = {}
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'r:' then
    table.insert(out, string.sub(all[i], 3))
    table.insert(out, all[i + 1])
  end
end
return out
`;

/**
 * KEYS: inbox, batch sequence, open-batch set. Moves up to ARGV[1] subject keys from the
 * inbox into a new batch (their digests in order) and links each subject to it.
 * The id is the sequence number and the caller's random nonce (ARGV[6]): a Redis that loses
 * its last writes rolls the sequence back, and calendars, relays and in-flight jobs may still
 * hold the lost batch's id, so the sequence alone must never name a batch twice.
 * Returns {id, size} or nil when the inbox is empty.
 */
export const CUT_BATCH = `
local max, base, w, now, nowIso, nonce = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local keys = redis.call('LPOP', KEYS[1], max)
if not keys then return false end
local live, digests = {}, {}
for _, k in ipairs(keys) do
  local s = base .. ':s:' .. k
  local d = redis.call('HGET', s, 'digest')
  if d and not redis.call('HGET', s, w .. ':batch') then
    table.insert(live, k)
    table.insert(digests, d)
  end
end
if #live == 0 then return false end
local id = tostring(redis.call('INCR', KEYS[2])) .. '-' .. nonce
local bkey = base .. ':b:' .. w .. ':' .. id
if redis.call('EXISTS', bkey) == 1 then return redis.error_reply('batch id ' .. id .. ' already exists') end
redis.call('HSET', bkey, 'size', #live, 'created', now, 'anchored_at', nowIso, 'digests', table.concat(digests))
local lkey = base .. ':bk:' .. w .. ':' .. id
for i = 1, #live, 1000 do
  local chunk = {}
  for j = i, math.min(i + 999, #live) do table.insert(chunk, live[j]) end
  redis.call('RPUSH', lkey, unpack(chunk))
end
for i, k in ipairs(live) do
  redis.call('HSET', base .. ':s:' .. k, w .. ':batch', id, w .. ':index', i - 1)
end
redis.call('SADD', KEYS[3], id)
return {id, #live}
`;

/** KEYS: subject, history, events. Records a refused job without touching an accepted subject. */
export const REJECT = `
local s = KEYS[1]
local key, reason, now, nowIso, base, maxlen, code = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local status = redis.call('HGET', s, 'status')
local entry = cjson.encode({at = nowIso, event = code, reason = reason})
if status and status ~= 'rejected' then
  redis.call('RPUSH', KEYS[2], entry)
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxlen, '*', 'data',
    cjson.encode({type = code, key = key, status = status, at = nowIso, reason = reason}))
  return 0
end
redis.call('HSET', s, 'key', key, 'status', 'rejected', 'reason', reason, 'created', now, 'updated', now)
redis.call('ZADD', base .. ':idx:all', now, key)
redis.call('ZADD', base .. ':idx:st:rejected', now, key)
redis.call('RPUSH', KEYS[2], entry)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxlen, '*', 'data',
  cjson.encode({type = code, key = key, status = 'rejected', at = nowIso, reason = reason}))
return 1
`;

/**
 * KEYS: subject, event hash. Auto mode's per-subject event for a subject of a batch decided
 * `envelope`: stored and linked only when the subject has none yet, so a retry or a second
 * daemon signing again (a new signature, the same id) never replaces the copy published.
 * ARGV: event id, event JSON, subject key. Returns the id of the subject's event in force,
 * or false when the subject is gone.
 */
export const SET_SUBJECT_EVENT = `
local s, ev = KEYS[1], KEYS[2]
local id, json, key = ARGV[1], ARGV[2], ARGV[3]
local cur = redis.call('HMGET', s, 'nostr:event', 'status')
if not cur[2] then return false end
if cur[1] then return cur[1] end
redis.call('HSET', ev, 'json', json, 'subject', key)
redis.call('HSET', s, 'nostr:event', id)
return id
`;
