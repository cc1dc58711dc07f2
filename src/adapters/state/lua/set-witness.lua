-- set-witness: moves one witness of many subjects (a batch, or one subject) to a new status
-- in one call. A witness moves only forward: its progress number (ARGV[3]) must not fall
-- below the stored one, so a stale report cannot undo a newer one. The same status further
-- along only adds history. The overall status follows from every witness (SPEC §4.3): all
-- confirmed → confirmed, all failed → failed, any partial or confirmed → partial, else
-- pending. Indexes and counts move with both, one command per index and count for the whole
-- call (a witness confirmed leaves its witness indexes: a confirmed subject is in
-- idx:st:<status> only). A confirmation counts in the minute's timeline (GET /v1/timeline):
-- per witness and per subject, the number, the summed and the longest time to confirm; the
-- minute expires after 2 h.
--
--
-- History. One subject (ARGV[8] ''): the transition goes to its own history (its hash's
-- h:<n> fields, history-lib.lua). A batch's subjects (ARGV[8] the call's token): the transition is
-- recorded once, on the batch's transition list bh:<witness>:<id> (KEYS[12]), as
-- {at, ms, c (the token), witness, from, to, detail}; the subjects' own histories are not
-- written. The first subject of the call (over all its chunks: the token on one of the list's latest
-- entries says the entry is this call's) that takes an entry fixes its `from`. A subject that
-- takes none while the entry exists, or takes one from another status, is marked
-- `hx:<witness>:<n>` (entry n does not apply to it) in its hash, and in the second case gets
-- its own entry. SubjectStore.history merges the two.
--
-- KEYS[1] events stream, [2..4] idx:w:<witness>:pending, partial, failed (of the witness in
-- ARGV[1]), [5..8] idx:st:pending, partial, confirmed, failed, [9] meta, [10] the timeline
-- minute of ARGV[4] (tl:<floor(now / 60000)>), [11] counts, [12] the batch's transition list
-- (any key when ARGV[8] is ''), then per subject its hash, then last the
-- stream's tally (stream-lib.lua).
-- ARGV[1] witness, [2] new status, [3] progress, [4] now (ms), [5] now (ISO), [6] detail
-- ('' for none), [7] stream MAXLEN, [8] the call's token ('' for one subject), [9] the
-- witnesses a subject may have (comma list: their statuses are read with the subject's own,
-- in its one HMGET; a subject's witnesses are those of the list it has a w:<witness> field
-- for), [10] the keys' stream tokens (22
-- characters each, in order, src/adapters/state/stream-entries.ts; '' when a key of the call is
-- not a canonical UUID), [11] the detail as a subject's own history keeps it (history-entries.ts:
-- a relay named by its registry number, `~<n>`), then the subject keys (in KEYS order).
-- `u` (last change) and `c:<witness>` (confirmed) are written as ms since `created`.
-- The stream takes one entry per call for the subjects whose status changed (none when none
-- did): {type, witness, to, at, detail, runs = [[from, previous, status, key, ...], ...]}, runs
-- of consecutive subjects in the order they changed (with ARGV[10]'s tokens: ru = [[from,
-- previous, status, their tokens concatenated], ...]), or the one-subject form {type, key,
-- witness, from, to, status, previous, at, detail} (src/adapters/state/stream-entries.ts),
-- added through add_events (stream-lib.lua): the stream keeps about ARGV[7] subject events.
-- Returns per subject {outcome, overall, created}, flat (outcome 1: the status changed,
-- 2: an entry without a change, 0: nothing, 3: nothing and not marked because the batch has
-- no entry of this call yet: the caller marks it once one exists), then the index of the
-- call's batch entry (-1: none).
local ORDER = {pending = 0, partial = 1, confirmed = 2, failed = 3}
local w, new, prog, now, nowIso, detail, maxlen, token = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
if not ORDER[new] then return redis.error_reply('set-witness: unknown status ' .. tostring(new)) end
local tokens = ARGV[10]
local ownDetail = ARGV[11]
local n = #ARGV - 11
if n < 1 or #KEYS ~= 13 + n or (tokens ~= '' and #tokens ~= 22 * n) then return redis.error_reply('set-witness: ' .. #KEYS .. ' keys for ' .. n .. ' subjects') end
-- the batch entry of this call, when an earlier chunk made it: {index, from}
local bh, entryIndex, entryFrom = KEYS[12], -1, nil
if token ~= '' then
  -- Another call on the same batch (a second daemon, another relay's report) may have added
  -- its entry after this call's: look for this call's token among the latest entries, not
  -- only the last, so that one call never makes two entries (a second one would apply to
  -- subjects that took the first).
  local len = redis.call('LLEN', bh)
  local from = math.max(0, len - 64)
  local recent = redis.call('LRANGE', bh, from, -1)
  for i = #recent, 1, -1 do
    local ok, e = pcall(cjson.decode, recent[i])
    if ok and type(e) == 'table' and e.c == token then entryIndex = from + i - 1; entryFrom = e.from; break end
  end
end
-- Records a subject's entry: on its own list (one subject, or a batch subject that came from
-- another status than the batch's entry), or once on the batch. Returns nothing.
local function record(s, entry, created, hnext)
  local own = witness_entry(now, created, w, entry.from, entry.to, entry.status, entry.detail and ownDetail)
  if token == '' then add_history(s, own, hnext); return end
  if entryIndex < 0 then
    local be = {at = nowIso, ms = tonumber(now), c = token, witness = w, from = entry.from, to = entry.to}
    if detail ~= '' then be.detail = detail end
    entryIndex = redis.call('RPUSH', bh, cjson.encode(be)) - 1
    entryFrom = entry.from
  elseif entry.from ~= entryFrom then
    redis.call('HSET', s, 'hx:' .. w .. ':' .. entryIndex, 1)
    add_history(s, own, hnext)
  end
end
-- A batch subject that takes no entry: marked when the call's entry exists, else reported (3).
local function none(s)
  if token == '' then return 0 end
  if entryIndex >= 0 then redis.call('HSET', s, 'hx:' .. w .. ':' .. entryIndex, 1); return 0 end
  return 3
end
local W_INDEX = {pending = KEYS[2], partial = KEYS[3], failed = KEYS[4]}
local function statusIndex(st)
  if not ORDER[st] then error('set-witness: stored status ' .. tostring(st) .. ' is not one of pending, partial, confirmed, failed') end
  return KEYS[5 + ORDER[st]]
end
local rem, add, counts, countOrder = {}, {}, {}, {}
local function move(fromIndex, toIndex, key, score)
  if fromIndex then rem[fromIndex] = rem[fromIndex] or {}; table.insert(rem[fromIndex], key) end
  if toIndex then add[toIndex] = add[toIndex] or {}; table.insert(add[toIndex], score); table.insert(add[toIndex], key) end
end
local function count(field, d)
  if not counts[field] then counts[field] = 0; table.insert(countOrder, field) end
  counts[field] = counts[field] + d
end
local tally, tallyOrder = {}, {}
local function tallied(field, took)
  local t = tally[field]
  if not t then t = {n = 0, sum = 0, max = -1}; tally[field] = t; table.insert(tallyOrder, field) end
  t.n = t.n + 1; t.sum = t.sum + took
  if took > t.max then t.max = took end
end
-- The witness statuses read with every subject: field 4 + knownAt[name] of its HMGET.
local knownFields, knownAt = {}, {}
for ww in string.gmatch(ARGV[9], '[^,]+') do table.insert(knownFields, 'w:' .. ww); knownAt[ww] = #knownFields end
-- then the history probe (history-lib.lua): the next own entry's number, in the same read
local probeFields = {unpack(knownFields)}
for _, f in ipairs(HISTORY_PROBE) do table.insert(probeFields, f) end
-- The changes, in order, as runs of subjects sharing (from, previous, status): the call's one
-- stream entry.
local runs, runTokens, nchanged = {}, {}, 0
local function changed(i, key, from, previous, status)
  local last = runs[#runs]
  if not last or last[1] ~= from or last[2] ~= previous or last[3] ~= status then
    last = {from, previous, status}
    table.insert(runs, last)
    table.insert(runTokens, {})
  end
  table.insert(last, key)
  if tokens ~= '' then table.insert(runTokens[#runTokens], string.sub(tokens, 22 * i - 21, 22 * i)) end
  nchanged = nchanged + 1
end
local out = {}
for i = 1, n do
  local key, s = ARGV[11 + i], KEYS[12 + i]
  -- one read per subject: this witness, the overall status, and every witness's status
  local cur = redis.call('HMGET', s, 'w:' .. w, 'p:' .. w, 'status', 'created', unpack(probeFields))
  local hnext = history_next(cur, 5 + #knownFields)
  local old, stored = cur[1], tonumber(cur[2] or '0')
  if not old then
    table.insert(out, 0); table.insert(out, cur[3] or ''); table.insert(out, cur[4] or '0')
  elseif prog < stored then
    table.insert(out, none(s)); table.insert(out, cur[3]); table.insert(out, cur[4])
  elseif old == new then
    -- Same status, further along (another relay, the calendars answered): history only.
    local outcome
    if prog > stored then
      redis.call('HSET', s, 'p:' .. w, prog)
      if detail ~= '' then
        record(s, {at = nowIso, event = 'witness', witness = w, from = old, to = new, status = cur[3], detail = detail}, cur[4], hnext)
        outcome = 2
      end
    end
    if not outcome then outcome = none(s) end
    table.insert(out, outcome); table.insert(out, cur[3]); table.insert(out, cur[4])
  else
    if not ORDER[old] then error('set-witness: stored witness status ' .. tostring(old) .. ' is not one of pending, partial, confirmed, failed') end
    local created = cur[4]
    -- `u` and `c:<witness>`: ms since `created`
    local took = tonumber(now) - tonumber(created)
    local fields = {'p:' .. w, prog, 'w:' .. w, new, 'u', took}
    move(W_INDEX[old], W_INDEX[new], key, created)
    count('w:' .. w .. ':' .. old, -1); count('w:' .. w .. ':' .. new, 1)
    if new == 'confirmed' then
      table.insert(fields, 'c:' .. w); table.insert(fields, took)
      tallied(w, took)
    end
    -- every witness's status, this one's as it now is: the w:<witness> fields it has (of those named)
    local names, others = {}, {}
    for j, f in ipairs(knownFields) do
      if cur[4 + j] then table.insert(names, string.sub(f, 3)); others[#names] = cur[4 + j] end
    end
    if not knownAt[w] then table.insert(names, w) end
    local nconf, nfail, nprog = 0, 0, 0
    for j, ww in ipairs(names) do
      local v = ww == w and new or others[j]
      if v == 'confirmed' then nconf = nconf + 1; nprog = nprog + 1
      elseif v == 'failed' then nfail = nfail + 1
      elseif v == 'partial' then nprog = nprog + 1 end
    end
    local overall = 'pending'
    if nconf == #names then overall = 'confirmed'
    elseif nfail == #names then overall = 'failed'
    elseif nprog > 0 then overall = 'partial' end
    local oldOverall = cur[3]
    if overall ~= oldOverall then
      table.insert(fields, 'status'); table.insert(fields, overall)
      move(statusIndex(oldOverall), statusIndex(overall), key, created)
      count('st:' .. oldOverall, -1); count('st:' .. overall, 1)
      if overall == 'confirmed' then tallied('subject', took) end
    end
    redis.call('HSET', s, unpack(fields))
    local entry = {at = nowIso, event = 'witness', witness = w, from = old, to = new, status = overall}
    if detail ~= '' then entry.detail = detail end
    record(s, entry, created, hnext)
    changed(i, key, old, oldOverall, overall)
    table.insert(out, 1); table.insert(out, overall); table.insert(out, created)
  end
end
-- the stream: one entry for the call (the one-subject form when one subject changed)
if nchanged > 0 then
  local data
  if nchanged == 1 then
    local r = runs[1]
    data = {type = 'state', key = r[4], witness = w, from = r[1], to = new, status = r[3], previous = r[2], at = nowIso, detail = detail}
  elseif tokens ~= '' then
    local ru = {}
    for j, r in ipairs(runs) do ru[j] = {r[1], r[2], r[3], table.concat(runTokens[j])} end
    data = {type = 'state', witness = w, to = new, at = nowIso, detail = detail, ru = ru}
  else
    data = {type = 'state', witness = w, to = new, at = nowIso, detail = detail, runs = runs}
  end
  add_events(KEYS[1], KEYS[#KEYS], maxlen, nchanged, cjson.encode(data))
end
-- the indexes and counts, one command each for the whole call (500 members at a time: Lua's stack)
for ix, members in pairs(rem) do
  for j = 1, #members, 500 do redis.call('ZREM', ix, unpack(members, j, math.min(j + 499, #members))) end
end
for ix, pairs_ in pairs(add) do
  for j = 1, #pairs_, 1000 do redis.call('ZADD', ix, unpack(pairs_, j, math.min(j + 999, #pairs_))) end
end
for _, field in ipairs(countOrder) do
  if counts[field] ~= 0 then redis.call('HINCRBY', KEYS[11], field, counts[field]) end
end
if tally[w] then redis.call('HSET', KEYS[9], 'last_confirmed:' .. w, now) end
-- the last hour's timeline (GET /v1/timeline): per minute, confirmations and their time to confirm
for _, field in ipairs(tallyOrder) do
  local t, tl = tally[field], KEYS[10]
  -- the expiry is set when the minute's first count of a field is made, not on every count
  if redis.call('HINCRBY', tl, 'n:' .. field, t.n) == t.n then redis.call('PEXPIRE', tl, 7200000) end
  redis.call('HINCRBY', tl, 't:' .. field, t.sum)
  if t.max > tonumber(redis.call('HGET', tl, 'm:' .. field) or '-1') then redis.call('HSET', tl, 'm:' .. field, t.max) end
end
table.insert(out, entryIndex)
return out
