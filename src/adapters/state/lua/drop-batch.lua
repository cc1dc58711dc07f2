-- drop-batch: removes a batch none of whose subjects is left in Redis (forget.lua put it in
-- bfree:<witness>) with every key of its own: its hash (digests, calendar states, the
-- batch's Nostr event JSON), its key list bk:, its transition list bh:, its Nostr batch
-- event (batch mode) or the NIP-03 attestations signed for it (OTS), with their places in
-- nostr:recent, and its memberships of bopen: and bwork:. A batch that still has work after
-- its confirmation (bwork:, upgrade polls or NIP-03 attestations) is left for a later call.
-- A batch some of whose subjects were retired lean (its `lean` field, forget.lua) keeps its
-- hash and its events, which their proofs are rebuilt from: only its key list and transition
-- list go (no subject of it is left to move or to show a history).
-- The caller reads the event ids the batch names and declares their keys; the script checks
-- it names exactly those (else nothing is written and the caller reads again).
--
-- KEYS[1] bfree:<witness>, [2] bopen:<witness>, [3] bwork:<witness>, [4] batch hash, [5] its
-- key list, [6] its transition list, [7] nostr:recent, then one event hash per event id.
-- ARGV[1] batch id, [2] witness, then the event ids the caller read (same order as the keys).
-- Returns 1 dropped (or gone already), 0 left (work left, or subjects still in Redis: it
-- leaves bfree in that case), 2 the event ids changed since they were read.
local id, w = ARGV[1], ARGV[2]
local n = #ARGV - 2
if #KEYS ~= 7 + n then return redis.error_reply('drop-batch: ' .. #KEYS .. ' keys for ' .. n .. ' event ids') end
local b = KEYS[4]
if redis.call('EXISTS', b) == 0 then
  redis.call('DEL', KEYS[5], KEYS[6])
  redis.call('SREM', KEYS[1], id)
  return 1
end
if redis.call('SISMEMBER', KEYS[3], id) == 1 then return 0 end
local gone = tonumber(redis.call('HGET', b, 'gone') or '0')
if gone < tonumber(redis.call('HGET', b, 'size') or '0') then
  redis.call('SREM', KEYS[1], id)
  return 0
end
if tonumber(redis.call('HGET', b, 'lean') or '0') > 0 then
  redis.call('DEL', KEYS[5], KEYS[6])
  redis.call('SREM', KEYS[1], id)
  redis.call('SREM', KEYS[2], id)
  return 1
end
-- the events the batch names
local named = {}
if w == 'nostr' then
  local json = redis.call('HGET', b, 'event')
  if json then
    local ok, ev = pcall(cjson.decode, json)
    if ok and type(ev) == 'table' and type(ev.id) == 'string' then named[ev.id] = true end
  end
else
  for _, f in ipairs(redis.call('HKEYS', b)) do
    if string.sub(f, 1, 6) == 'nip03:' then named[redis.call('HGET', b, f)] = true end
  end
end
local declared = 0
for i = 1, n do
  if not named[ARGV[2 + i]] then return 2 end
  declared = declared + 1
end
local count = 0
for _ in pairs(named) do count = count + 1 end
if count ~= declared then return 2 end
redis.call('DEL', b, KEYS[5], KEYS[6])
for i = 1, n do redis.call('DEL', KEYS[7 + i]) end
if n > 0 then redis.call('ZREM', KEYS[7], unpack(ARGV, 3)) end
redis.call('SREM', KEYS[1], id)
redis.call('SREM', KEYS[2], id)
return 1
