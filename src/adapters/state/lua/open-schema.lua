-- open-schema: records the state's layout version, moving a layout-1 Redis to the current
-- layout first, atomically (two daemons opening at once: the second finds it done).
-- Layout 1 had, besides idx:st:<status>, an index of every subject (idx:all) and one per
-- witness status (idx:w:<witness>:<status>), and no counts. Layout 2 counts subjects per
-- status and per witness status in one hash, and drops idx:all and idx:w:<witness>:confirmed
-- (a confirmed subject is in idx:st:confirmed only). The counts are taken from the old
-- indexes' sizes, then those two kinds of index are removed.
-- Layout 3 records a batch's witness transitions once on the batch (bh:<witness>:<id>)
-- instead of in every subject's history; the histories written by layout 2 stay as they are
-- and are read as they are (AnchorStore.history merges a subject's own list with its
-- batches'), so moving 2 to 3 only records the version. Layout 1 moves to 3 in one step.
-- Layout 4 keeps a subject's digest and fingerprint as 32 bytes, fewer fields in its hash,
-- no acceptance entry in its history list (derived from the hash when read), and a batch's
-- digests as 32 bytes each; layouts 2 and 3 are read as they are (AnchorStore reads both
-- forms), so moving 2 or 3 to 4 only records the version.
-- Layout 5 writes no `witnesses` field, `u` and `c:<witness>` as ms since `created` and
-- `<witness>:i`; layout 4's fields are still read, so moving 2, 3 or 4 to 5 only records it.
-- Layout 6 writes packed stream entries of subjects whose keys are all canonical UUIDs as
-- tokens (src/adapters/state/stream-entries.ts: 22 characters a key, 43 a digest); plain
-- entries are still read, so moving 2–5 to 6 only records it. A release of layout 5 would not
-- read the token entries: it refuses to open a layout-6 Redis.
-- Any other schema key already present is left alone (the caller reads and judges it first).
--
-- KEYS[1] schema key, [2] counts, [3] idx:all, [4..8] idx:st:pending, partial, confirmed,
-- failed, rejected, then per witness in ARGV[2] (comma list) its idx:w:<w>:pending, partial,
-- confirmed, failed. ARGV[1] the current layout version, [2] witnesses.
-- Returns 'present' (a schema key other than 2–5 was there), 'layout 2' / '3' / '4' / '5'
-- (moved from it), 'fresh'
-- (no subjects) or 'migrated' (from layout 1).
local was = redis.call('GET', KEYS[1])
if (was == '2' or was == '3' or was == '4' or was == '5') and ARGV[1] == '6' then
  redis.call('SET', KEYS[1], ARGV[1])
  return 'layout ' .. was
end
if was then return 'present' end
local statuses = {'pending', 'partial', 'confirmed', 'failed', 'rejected'}
local wstatuses = {'pending', 'partial', 'confirmed', 'failed'}
local fields, subjects = {}, 0
for i, st in ipairs(statuses) do
  local n = redis.call('ZCARD', KEYS[3 + i])
  subjects = subjects + n
  table.insert(fields, 'st:' .. st); table.insert(fields, n)
end
local k = 9
for w in string.gmatch(ARGV[2], '[^,]+') do
  for _, st in ipairs(wstatuses) do
    table.insert(fields, 'w:' .. w .. ':' .. st); table.insert(fields, redis.call('ZCARD', KEYS[k]))
    if st == 'confirmed' then redis.call('UNLINK', KEYS[k]) end
    k = k + 1
  end
end
if subjects > 0 then redis.call('HSET', KEYS[2], unpack(fields)) end
redis.call('UNLINK', KEYS[3])
redis.call('SET', KEYS[1], ARGV[1])
return subjects > 0 and 'migrated' or 'fresh'
