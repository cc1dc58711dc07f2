-- fix-event-ids: fixes, once, the Nostr event ids an OTS batch commits to (NIP-03): its own
-- subjects' event ids, then late ones waiting in nip03:late (oldest first), and takes those
-- out of the waiting set in the same call, so no two batches commit one late event (two
-- daemons, a crash or a refused write between reading and removing did that). A batch whose
-- list is fixed already gets that list back and nothing changes.
--
-- KEYS[1] the batch hash, [2] nip03:late. ARGV[1] the field (event_ids), [2] the most late
-- ids to take, then the batch's own event ids (64 hex each).
-- Returns the list in force: the ids concatenated (64 hex each).
local fixed = redis.call('HGET', KEYS[1], ARGV[1])
if fixed then return fixed end
local own = {}
local ids = {}
for i = 3, #ARGV do
  own[ARGV[i]] = true
  ids[#ids + 1] = ARGV[i]
end
local late = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1)
local taken = {}
for _, e in ipairs(late) do
  if not own[e] then ids[#ids + 1] = e end
  taken[#taken + 1] = e
  if #taken == 1000 then
    redis.call('ZREM', KEYS[2], unpack(taken))
    taken = {}
  end
end
if #taken > 0 then redis.call('ZREM', KEYS[2], unpack(taken)) end
local text = table.concat(ids)
redis.call('HSET', KEYS[1], ARGV[1], text)
return text
