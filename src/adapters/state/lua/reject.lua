-- reject: records a refused job without touching an accepted subject. A subject that is
-- accepted keeps its state and gets the refusal in its history and on the stream; an
-- unknown (or already refused) key becomes a subject with status rejected and the reason.
--
-- KEYS[1] subject hash (its history: its h:<n> fields, history-lib.lua), [2] events stream,
-- [3] counts, [4] idx:st:rejected, [5] the stream's tally (stream-lib.lua).
-- ARGV[1] key, [2] reason, [3] now (ms), [4] now (ISO), [5] stream MAXLEN,
-- [6] code ('rejected' | 'conflict'). Returns 1 when the rejected record was written, else 0.
local s = KEYS[1]
local key, reason, now, nowIso, maxlen, code = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local status = redis.call('HGET', s, 'status')
local entry = cjson.encode({at = nowIso, event = code, reason = reason})
if status and status ~= 'rejected' then
  add_history(s, entry)
  add_events(KEYS[2], KEYS[5], maxlen, 1, cjson.encode({type = code, key = key, status = status, at = nowIso, reason = reason}))
  return 0
end
redis.call('HSET', s, 'status', 'rejected', 'reason', reason, 'created', now)
if not status then redis.call('HINCRBY', KEYS[3], 'st:rejected', 1) end
redis.call('ZADD', KEYS[4], now, key)
add_history(s, entry)
add_events(KEYS[2], KEYS[5], maxlen, 1, cjson.encode({type = code, key = key, status = 'rejected', at = nowIso, reason = reason}))
return 1
