-- set-subject-event: auto mode's per-subject event for a subject of a batch decided
-- `envelope`: stored and linked only when the subject has none yet, so a retry or a second
-- daemon signing again (a new signature, the same id) never replaces the copy published.
-- The event hash keeps no JSON (the subject's envelope rebuilds the event, events.ts): the
-- subject's key, the signature and the signer's registry number.
--
-- KEYS[1] subject hash, KEYS[2] event hash.
-- ARGV: event id (hex), signature (64 bytes), signer number, subject key, the id as stored (its 32 bytes).
-- Returns {id (hex) of the subject's event in force, 1 when it is the one given here, else 0},
-- or false when the subject is gone.
local s, ev = KEYS[1], KEYS[2]
local id, sig, signer, key, stored = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
-- the stored id (32 bytes) as hex
local function hex(x)
  return (string.gsub(x, '.', function(c) return string.format('%02x', string.byte(c)) end))
end
local cur = redis.call('HMGET', s, 'nostr:event', 'status')
if not cur[2] then return false end
if cur[1] then return {hex(cur[1]), 0} end
redis.call('HSET', ev, 'subject', key, 'sig', sig, 'sg', signer)
redis.call('HSET', s, 'nostr:event', stored)
return {id, 1}
