-- fix-event-ids: fixes, once, the Nostr event ids an OTS batch commits to (NIP-03): its own
-- subjects' event ids, then late ones waiting in nip03:late (oldest first), and takes those
-- out of the waiting set in the same call, so no two batches commit one late event (two
-- daemons, a crash or a refused write between reading and removing did that). A batch whose
-- list is fixed already keeps it and nothing changes (the caller reads the list in force).
--
-- The list is kept as the ids' bytes, 32 each, concatenated (half their hex).
--
-- KEYS[1] the batch hash, [2] nip03:late (its members 64 hex). ARGV[1] the field
-- (event_ids32), [2] the most late ids to take, then the batch's own event ids (32 bytes each).
-- Returns 1 when this call fixed the list, 0 when one was fixed already.
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
local function bytes(hex)
  return (string.gsub(hex, '..', function(cc) return string.char(tonumber(cc, 16)) end))
end
local own = {}
local ids = {}
for i = 3, #ARGV do
  own[ARGV[i]] = true
  ids[#ids + 1] = ARGV[i]
end
local late = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[2]) - 1)
local taken = {}
for _, hex in ipairs(late) do
  local e = bytes(hex)
  if not own[e] then ids[#ids + 1] = e end
  taken[#taken + 1] = hex
  if #taken == 1000 then
    redis.call('ZREM', KEYS[2], unpack(taken))
    taken = {}
  end
end
if #taken > 0 then redis.call('ZREM', KEYS[2], unpack(taken)) end
redis.call('HSET', KEYS[1], ARGV[1], table.concat(ids))
return 1
