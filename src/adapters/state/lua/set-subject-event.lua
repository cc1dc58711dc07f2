-- set-subject-event: auto mode's per-subject event for a subject of a batch decided
-- `envelope`: stored and linked only when the subject has none yet, so a retry or a second
-- daemon signing again (a new signature, the same id) never replaces the copy published.
-- The event's content is the envelope, so once the event is stored the envelope's own copy
-- (e:<key>) is dropped when it is the same text: the envelope is stored once.
--
-- KEYS[1] subject hash, KEYS[2] event hash, KEYS[3] the subject's envelope.
-- ARGV: event id (hex), event JSON, subject key, the id as stored (its 32 bytes), then the
-- subject-hash fields that keep its envelope as claims (batch mode), to drop once this event is linked: the caller passes them only when it made
-- the event's content from the envelope those claims rebuild (none: nothing dropped).
-- Returns the id (hex) of the subject's event in force, or false when the subject is gone.
local s, ev = KEYS[1], KEYS[2]
local id, json, key = ARGV[1], ARGV[2], ARGV[3]
local stored = ARGV[4]
-- the stored id (32 bytes) as hex
local function hex(x)
  return (string.gsub(x, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
local cur = redis.call('HMGET', s, 'nostr:event', 'status')
if not cur[2] then return false end
if cur[1] then return hex(cur[1]) end
redis.call('HSET', ev, 'json', json, 'subject', key)
redis.call('HSET', s, 'nostr:event', stored)
if #ARGV > 4 then redis.call('HDEL', s, unpack(ARGV, 5)) end
local envelope = redis.call('GET', KEYS[3])
if envelope then
  local ok, ev = pcall(cjson.decode, json)
  if ok and type(ev) == 'table' and ev.content == envelope then redis.call('DEL', KEYS[3]) end
end
return id
