-- outbox-take: hands one daemon the next group of events due on one relay, within the relay's
-- rate and pause. The outbox is a sorted set of event ids scored by when each is due (ms): a
-- new event now, a retry at its backoff, one taken at the end of its lease. Taking an event
-- moves its score to now + lease, so an event whose daemon died is due again when the lease
-- ends (the taker renews it while it works); nothing is removed until its answer is recorded.
--
-- KEYS[1] the relay's outbox, [2] its pause (set on a rate-limited: answer), [3] its rate
-- window (events taken since the window opened; expires 60 s after it opened).
-- ARGV[1] now (ms), [2] most events to take, [3] lease (ms), [4] events per minute.
-- Returns {0, id, ...} when events were taken, else {wait}: ms until one may be due (-1: the
-- outbox is empty).
local now, most, lease, rate = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then return {paused} end
local used = tonumber(redis.call('GET', KEYS[3]) or '0')
local n = math.min(most, rate - used)
if n <= 0 then return {math.max(1, redis.call('PTTL', KEYS[3]))} end
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, n)
if #ids == 0 then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if #first == 0 then return {-1} end
  return {math.max(1, tonumber(first[2]) - now)}
end
local args = {}
for _, id in ipairs(ids) do
  table.insert(args, now + lease)
  table.insert(args, id)
end
redis.call('ZADD', KEYS[1], 'XX', unpack(args))
if used == 0 then redis.call('SET', KEYS[3], #ids, 'PX', 60000) else redis.call('INCRBY', KEYS[3], #ids) end
local out = {0}
for _, id in ipairs(ids) do table.insert(out, id) end
return out
