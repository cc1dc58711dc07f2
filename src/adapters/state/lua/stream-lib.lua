-- stream-lib: put in front of every script that writes the state-change stream (scripts.ts).
-- add_events(stream, tally, maxlen, n, data) adds one entry of n subject events and keeps the
-- stream near `maxlen` subject events, whatever the entries' sizes (a one-subject entry and a
-- packed one of 250 alike): the tally (a sorted set, declared in KEYS) holds the running count
-- of events ever added (member '~total') and, every maxlen/100 events, a mark: the id of the
-- entry that crossed it, scored by the count through it. When a mark is added, the stream is
-- trimmed (XTRIM MINID ~) to the newest mark that leaves at least maxlen events after it, and
-- older marks go. Nothing younger than the last maxlen subject events is ever trimmed, so a
-- consumer behind by fewer than that (the webhook fan-out, a feed client resuming) loses
-- nothing; the stream holds at most about maxlen + maxlen/100 events plus one entry, and
-- a Redis macro node (XTRIM ~ trims whole nodes only). Two commands per call (XADD, ZINCRBY),
-- four more once per maxlen/100 events.
local function add_events(stream, tally, maxlen, n, data)
  maxlen = tonumber(maxlen)
  local id = redis.call('XADD', stream, '*', 'data', data)
  local c = tonumber(redis.call('ZINCRBY', tally, n, '~total'))
  local step = math.max(1, math.floor(maxlen / 100))
  if math.floor(c / step) ~= math.floor((c - n) / step) then
    redis.call('ZADD', tally, c, id)
    local cut = redis.call('ZREVRANGEBYSCORE', tally, c - maxlen, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if cut[1] then
      redis.call('XTRIM', stream, 'MINID', '~', cut[1])
      redis.call('ZREMRANGEBYSCORE', tally, '-inf', '(' .. cut[2])
    end
  end
  return id
end
