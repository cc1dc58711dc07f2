-- note-late: NIP-03, notes event ids whose OTS batch fixed its list without them, so a later
-- batch commits them (fix-event-ids.lua takes them out of nip03:late). Each is noted once in
-- its life: the event hash keeps when (`nip03:late`), and an event noted before is left alone,
-- whether it still waits or a later batch took it. Both sides note (the OTS side after fixing a
-- list, the Nostr side after linking), and either may run again (a retried job, a daemon killed
-- before its batch's events_root was written): without the mark, a retry handed an event a
-- later batch had committed back to the waiting set, and a third batch committed it again (two
-- different attestations for one event). An event with no hash is noted as before: nothing
-- to mark, and nothing to attest (the publisher needs its JSON).
--
-- KEYS[1] nip03:late, then the event hash of each id, in order.
-- ARGV[1] now (ms), then the event ids (64 hex each).
-- Returns how many ids were added to the waiting set.
local n = #ARGV - 1
if #KEYS ~= 1 + n then return redis.error_reply('note-late: ' .. #KEYS .. ' keys for ' .. n .. ' event ids') end
local now = ARGV[1]
local added = 0
for i = 1, n do
  local ev = KEYS[1 + i]
  local fresh = true
  if redis.call('EXISTS', ev) == 1 then fresh = redis.call('HSETNX', ev, 'nip03:late', now) == 1 end
  if fresh then added = added + redis.call('ZADD', KEYS[1], 'NX', now, ARGV[1 + i]) end
end
return added
