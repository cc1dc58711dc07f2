-- accept: takes one or many subjects into state in one call (intake of a single-subject
-- job and of a bulk job alike). Per subject: a new subject is stored pending with its
-- envelope (as its claims in the subject hash when they fit, else under e:<key>; its own
-- Nostr event, when it has one, is rebuilt from it), indexed, put in the witness inboxes (with the anchor
-- log on, only when it is not logged here: the witnesses cut logged subjects from the log's
-- checkpoints, cut-checkpoint.lua) and announced on the events stream; the
-- same key with the same root fingerprint is a duplicate (nothing written); the same key
-- with another root is a conflict, recorded in that subject's history and on the stream,
-- never re-anchored. A subject refused earlier (status rejected) is replaced.
--
-- KEYS[1] events stream, [2] counts, [3] idx:st:pending, [4] idx:st:rejected,
-- then one idx:w:<witness>:pending per witness in ARGV[4] (in that order),
-- then the ARGV[5] witness inboxes, then per subject 3 keys: subject hash, envelope,
-- Nostr event hash (the subject hash again when the subject has no event), then
-- with the anchor log on, its three keys log:size, log:idx, log:tail (log-sequencer.ts),
-- then last the stream's tally (stream-lib.lua).
-- ARGV[1] now (ms), [2] now (ISO), [3] stream MAXLEN, [4] witnesses (comma list),
-- [5] number of inboxes, [6] the subjects' stream tokens (per subject, in order, its
-- key's 22 characters and its digest's 43, src/adapters/state/stream-entries.ts; '' when a key
-- of the call is not a canonical UUID), then per subject 10: key, kind, envelope ('' when it is kept as its
-- claims), digest (hex), fingerprint (as stored: 32 bytes), event id as stored (its 32 bytes; '' for none), the event's
-- signature (64 bytes), its signer's registry number (nostr-registry.ts), digest
-- as stored (32 bytes; the caller converts, not the script), the envelope's claims as
-- subject-hash fields ('' for none: pairs, each of name and value as one length byte then
-- its bytes; subject-hash.ts names them).
-- The event hash of a subject's own event keeps no JSON: `subject`, `sig` and `sg`; the
-- event is rebuilt from the subject's envelope (events.ts).
-- The subject hash keeps the digest, fingerprint and own event id (`nostr:event`) as 32
-- bytes, no `key` (it is in the key's name), no `u` until something changes (reads as
-- `created`), no `p:<witness>` while 0, no list of witnesses (they are its w:<witness>
-- fields). The acceptance is not written to its history (h:<n> fields, history-lib.lua):
-- SubjectStore.history derives it from the hash (`created`, `digest`), except for a subject
-- refused before (its history holds the refusal, and the acceptance goes after it).
-- Returns per subject {result, digest, detail}: {'created', '', ''}, {'duplicate', stored
-- digest, stored event id or ''}, {'conflict', stored digest, the reason recorded} or, with
-- the anchor log on, {'retired', '', ''} for a key retired lean (its log:idx value is
-- `<index>:<facts>`: nothing is written, the caller answers from the facts); then
-- each inbox's length after the new subjects went in (-1 when none did).
-- The stream: the subjects created are announced in one entry per run of them (a conflict
-- between two runs is written where it happened, so the stream keeps the order):
-- {type, status, at, u = their tokens, concatenated} when ARGV[6] has them, else
-- {type, status, at, subjects = [[key, digest], ...]}, or the one-subject form
-- {type, key, status, at, digest} for a run of one (src/adapters/state/stream-entries.ts).
-- Entries go through add_events (stream-lib.lua, the last key is the stream's tally): the
-- stream keeps about ARGV[3] subject events, however many each entry holds.
local now, nowIso, maxlen = ARGV[1], ARGV[2], ARGV[3]
-- a stored digest or event id (32 bytes) as hex; nil stays nil
local function hex(x)
  if not x then return x end
  return (string.gsub(x, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
local witnesses = {}
for w in string.gmatch(ARGV[4], '[^,]+') do table.insert(witnesses, w) end
local nw, ni = #witnesses, tonumber(ARGV[5])
local kbase = 4 + nw + ni
local tokens = ARGV[6]
local n = (#ARGV - 6) / 10
-- the anchor log is on when its three keys are given before the tally
local logOn = #KEYS == kbase + 3 * n + 4
if n ~= math.floor(n) or n < 1 or (#KEYS ~= kbase + 3 * n + 1 and not logOn) or (tokens ~= '' and #tokens ~= 65 * n) then
  return redis.error_reply('accept: ' .. #KEYS .. ' keys and ' .. #ARGV .. ' arguments do not describe whole subjects')
end
-- the claims' fields (length-prefixed name/value pairs) appended to a field list
local function unframe(p, into)
  local i = 1
  while i <= #p do
    local nl = string.byte(p, i)
    local name = string.sub(p, i + 1, i + nl)
    i = i + 1 + nl
    local vl = string.byte(p, i)
    table.insert(into, name); table.insert(into, string.sub(p, i + 1, i + vl))
    i = i + 1 + vl
  end
end
local out, added, inboxed, unrejected = {}, {}, {}, 0
-- The anchor log (docs/log.md): each subject created is appended in acceptance order, its
-- entry d || kind byte || key; a key already logged (accepted before, since forgotten) keeps
-- its index. A duplicate or a conflict is never logged.
local logKinds = {['receipt'] = 1, ['workflow-close'] = 2, ['chain-head'] = 3}
local logSize, logEntries = nil, {}
local function log_append(key, kind, digestBin)
  local lk = kbase + 3 * n
  if redis.call('HEXISTS', KEYS[lk + 2], key) == 1 then return false end
  logSize = logSize or tonumber(redis.call('GET', KEYS[lk + 1]) or '0')
  redis.call('HSET', KEYS[lk + 2], key, logSize)
  table.insert(logEntries, digestBin .. string.char(logKinds[kind]) .. key)
  logSize = logSize + 1
  return true
end
if logOn then
  for i = 0, n - 1 do
    local kind = ARGV[7 + 10 * i + 1]
    if not logKinds[kind] or #ARGV[7 + 10 * i + 8] ~= 32 then return redis.error_reply('accept: subject ' .. i .. ' has no log kind or 32-byte digest') end
  end
end
local announced = {}
local function announce()
  local c = #announced
  if c == 0 then return end
  local data
  if c == 1 then
    data = {type = 'accepted', key = announced[1][1], status = 'pending', at = nowIso, digest = announced[1][2]}
  elseif tokens ~= '' then
    local t = {}
    for j, a in ipairs(announced) do t[j] = string.sub(tokens, 65 * a[3] + 1, 65 * a[3] + 65) end
    data = {type = 'accepted', status = 'pending', at = nowIso, u = table.concat(t)}
  else
    local l = {}
    for j, a in ipairs(announced) do l[j] = {a[1], a[2]} end
    data = {type = 'accepted', status = 'pending', at = nowIso, subjects = l}
  end
  add_events(KEYS[1], KEYS[#KEYS], maxlen, c, cjson.encode(data))
  announced = {}
end
for i = 0, n - 1 do
  local a, k = 7 + 10 * i, kbase + 3 * i
  local key, kind, envelope, digest, fp, eventId, sig, signer, digestBin, claims = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7], ARGV[a + 8], ARGV[a + 9]
  local s, e, ev = KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local existing = redis.call('HMGET', s, 'status', 'fp', 'digest', 'nostr:event')
  existing[3] = hex(existing[3])
  local logged = logOn and (not existing[1] or existing[1] == 'rejected') and redis.call('HGET', KEYS[kbase + 3 * n + 2], key)
  if logged and string.find(logged, ':', 1, true) then
    table.insert(out, 'retired'); table.insert(out, ''); table.insert(out, '')
  elseif existing[1] and existing[1] ~= 'rejected' then
    if existing[2] == fp then
      table.insert(out, 'duplicate'); table.insert(out, existing[3] or ''); table.insert(out, hex(existing[4]) or '')
    else
      local reason = 'conflict: subject ' .. key .. ' is already anchored with another root (envelope digest ' .. (existing[3] or '') .. '); refused, not re-anchored'
      add_history(s, cjson.encode({at = nowIso, event = 'conflict', reason = reason}))
      announce()
      add_events(KEYS[1], KEYS[#KEYS], maxlen, 1, cjson.encode({type = 'conflict', key = key, status = existing[1], at = nowIso, reason = reason}))
      table.insert(out, 'conflict'); table.insert(out, existing[3] or ''); table.insert(out, reason)
    end
  else
    local refusals = false
    if existing[1] == 'rejected' then
      -- the refused record goes, its history (h:<n>) stays
      local drop = {}
      for _, f in ipairs(redis.call('HKEYS', s)) do
        if string.sub(f, 1, 2) == 'h:' then refusals = true else table.insert(drop, f) end
      end
      if #drop > 0 then redis.call('HDEL', s, unpack(drop)) end
      redis.call('ZREM', KEYS[4], key)
      unrejected = unrejected + 1
    end
    -- Every value in the subject hash stays within 64 bytes (a listpack): the envelope's claims
    -- are kept there when they fit (the envelope is rebuilt from them when read), else the
    -- envelope's text beside it under e:<key>.
    if envelope ~= '' then redis.call('SET', e, envelope) end
    -- no list of witnesses: a subject's witnesses are the w:<witness> fields it has
    local fields = {'kind', kind, 'digest', digestBin, 'fp', fp, 'status', 'pending', 'created', now}
    unframe(claims, fields)
    for _, w in ipairs(witnesses) do
      table.insert(fields, 'w:' .. w); table.insert(fields, 'pending')
    end
    if eventId ~= '' then
      redis.call('HSET', ev, 'subject', key, 'sig', sig, 'sg', signer)
      table.insert(fields, 'nostr:event'); table.insert(fields, eventId)
    end
    redis.call('HSET', s, unpack(fields))
    table.insert(added, key)
    if not (logOn and log_append(key, kind, digestBin)) then table.insert(inboxed, key) end
    -- the acceptance is derived from the hash when read, unless refusals came before it
    if refusals then
      add_history(s, cjson.encode({at = nowIso, event = 'accepted', status = 'pending', digest = digest}))
    end
    table.insert(announced, {key, digest, i})
    table.insert(out, 'created'); table.insert(out, ''); table.insert(out, '')
  end
end
announce()
-- The indexes and inboxes take every new subject in one command each (500 at a time: Lua's stack).
local lens = {}
for j = 1, #added, 500 do
  local z = {}
  for m = j, math.min(j + 499, #added) do
    table.insert(z, now); table.insert(z, added[m])
  end
  redis.call('ZADD', KEYS[3], unpack(z))
  for wi = 1, nw do redis.call('ZADD', KEYS[4 + wi], unpack(z)) end
end
for j = 1, #inboxed, 500 do
  for ii = 1, ni do lens[ii] = redis.call('RPUSH', KEYS[4 + nw + ii], unpack(inboxed, j, math.min(j + 499, #inboxed))) end
end
if logSize then
  local lk = kbase + 3 * n
  for j = 1, #logEntries, 500 do redis.call('RPUSH', KEYS[lk + 3], unpack(logEntries, j, math.min(j + 499, #logEntries))) end
  redis.call('SET', KEYS[lk + 1], logSize)
end
-- the counts per status and per witness status (what GET /v1/stats and the metrics show)
if #added > 0 then
  redis.call('HINCRBY', KEYS[2], 'st:pending', #added)
  for _, w in ipairs(witnesses) do redis.call('HINCRBY', KEYS[2], 'w:' .. w .. ':pending', #added) end
end
if unrejected > 0 then redis.call('HINCRBY', KEYS[2], 'st:rejected', -unrejected) end
-- -1: nothing went into the inboxes, so no batcher needs a poke
for ii = 1, ni do table.insert(out, lens[ii] or -1) end
return out
