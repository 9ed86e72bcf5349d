package redis

// The Lua scripts, one per algorithm. Each touches one key, KEYS[1] =
// "guardd:{<rule>:<key hex>}", so Cluster routes it by construction; reads
// Redis TIME, the one clock of the fleet; and sets a TTL once per window
// (PEXPIREAT ... NX on a new key, GT when a window rolls), never with a
// GET-then-SET.
//
// A call reports one node's flush for one key and may grant it a lease:
//
//	ARGV[1] delta    events counted beyond the node's lease (>= 0)
//	ARGV[2] release  unused lease handed back (>= 0)
//	ARGV[3] relwin   window the released lease was granted in (windows)
//	                 or its grant time (sliding_log); ignored otherwise
//	ARGV[4] held     lease the node still holds after the release
//	ARGV[5] want     the lease the node asks for (0: none); it gets at
//	                 most its share of the headroom
//	ARGV[6] nodes    live nodes
//	ARGV[7] period   µs
//	ARGV[8] limit    requests per period
//	ARGV[9] burst    capacity (token_bucket, gcra)
//	ARGV[10] member  unique per flush (sliding_log)
//	ARGV[11] flush   the node's flush interval, µs (0: no pacing)
//
// A lease is counted in Redis when granted, so the leases outstanding never
// exceed the headroom: the nodes together cannot admit more than the limit.
// The share is (headroom + held) / nodes, less what the node holds; once
// less than half the capacity is left, no more than the node asked for
// (about twice its demand per flush), so a node that sees little of a
// key's traffic leaves the rest of the budget to the others. A grant is a
// whole number of events (at least one while one is left): a fraction of
// an event held by each of several nodes could be spent by none of them,
// and the fleet would admit less than the limit.
//
// Pacing (every algorithm but sliding_log, with peers): a grant is also
// at most what the node would spend before the key's budget runs out at
// the fleet's pace: its rate (want over two flush intervals) times the
// headroom over the fleet's rate, the events the key has taken (fields
// "en", deltas and grants less hand-backs) since it was made ("ef"). A
// node that sees 5% of a hot key's traffic gets about 5% of what is left,
// not a third of it, so that little is stranded in its lease when the
// others have spent the rest; a key far from its limit (a long time to
// run out) is granted its share as before. A key's first call, whose pace
// is unknown yet, is granted no more than it asks for.
//
// Each returns {win, cur, prev, at, usage, reset, now, grant}, numbers as
// "%.17g" strings (Lua numbers would be truncated to integers on the way
// out). They mirror model.go; TestScriptsMatchModel checks that on a real
// redis-server.

const luaPrelude = `
local k = KEYS[1]
local d = tonumber(ARGV[1])
local rel = tonumber(ARGV[2])
local relwin = tonumber(ARGV[3])
local held = tonumber(ARGV[4])
local want = tonumber(ARGV[5])
local nodes = math.max(tonumber(ARGV[6]), 1)
local per = tonumber(ARGV[7])
local lim = tonumber(ARGV[8])
local burst = tonumber(ARGV[9])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function f(x) return string.format('%.17g', x) end
local function ms(us) return math.ceil(us / 1000) end
local fl = tonumber(ARGV[11]) or 0
local function pace(g, h, ef, en0, en)
  if nodes <= 1 or fl <= 0 or g <= 1 then return g end
  if en0 <= 0 then return math.min(g, math.max(1, math.floor(want + 1e-9))) end
  local cap = math.floor(want / (2 * fl) * h * (now - ef) / en + 1e-9)
  return math.max(1, math.min(g, cap))
end
local function share(h, cap)
  h = math.floor(h + 1e-9)
  if h <= 0 then return 0 end
  local g = math.max(1, math.floor((h + held) / nodes - held + 1e-9))
  if h < cap / 2 then g = math.min(g, math.max(1, math.floor(want + 1e-9))) end
  return math.min(g, h)
end
`

const luaSlidingWindow = luaPrelude + `
local v = redis.call('HMGET', k, 'w', 'c', 'p', 'ef', 'en')
local w = tonumber(v[1])
local c = tonumber(v[2]) or 0
local p = tonumber(v[3]) or 0
local ef = tonumber(v[4]) or now
local en0 = tonumber(v[5]) or 0
local en = en0 + d
local nw = math.floor(now / per)
local fresh = (w == nil)
local rolled = false
if fresh then
  w = nw
elseif nw == w + 1 then
  p, c, w, rolled = c, 0, nw, true
elseif nw > w + 1 then
  p, c, w, rolled = 0, 0, nw, true
end
local changed = d > 0
c = c + d
if rel > 0 then
  if relwin == w then c = math.max(0, c - rel); changed = true; en = math.max(0, en - rel)
  elseif relwin == w - 1 then p = math.max(0, p - rel); changed = true; en = math.max(0, en - rel) end
end
local grant = 0
if want > 0 then
  local e = now - w * per
  local h = lim - (p * (per - e) / per + c)
  grant = pace(share(h, lim), h, ef, en0, en)
  if grant > 0 then c = c + grant; en = en + grant; changed = true end
end
if changed then
  redis.call('HSET', k, 'w', f(w), 'c', f(c), 'p', f(p), 'ef', f(ef), 'en', f(en))
  if fresh then
    redis.call('PEXPIREAT', k, ms((w + 2) * per), 'NX')
  elseif rolled then
    redis.call('PEXPIREAT', k, ms((w + 2) * per), 'GT')
  end
end
local reset = now
if c > 0 then reset = (w + 2) * per elseif p > 0 then reset = (w + 1) * per end
return {f(w), f(c), f(p), '0', '0', f(reset), f(now), f(grant)}
`

const luaFixedWindow = luaPrelude + `
local v = redis.call('HMGET', k, 'w', 'c', 'ef', 'en')
local w = tonumber(v[1])
local c = tonumber(v[2]) or 0
local ef = tonumber(v[3]) or now
local en0 = tonumber(v[4]) or 0
local en = en0 + d
local nw = math.floor(now / per)
local fresh = (w == nil)
local rolled = false
if fresh then
  w = nw
elseif nw > w then
  c, w, rolled = 0, nw, true
end
local changed = d > 0
c = c + d
if rel > 0 and relwin == w then c = math.max(0, c - rel); changed = true; en = math.max(0, en - rel) end
local grant = 0
if want > 0 then
  grant = pace(share(lim - c, lim), lim - c, ef, en0, en)
  if grant > 0 then c = c + grant; en = en + grant; changed = true end
end
if changed then
  redis.call('HSET', k, 'w', f(w), 'c', f(c), 'ef', f(ef), 'en', f(en))
  if fresh then
    redis.call('PEXPIREAT', k, ms((w + 1) * per), 'NX')
  elseif rolled then
    redis.call('PEXPIREAT', k, ms((w + 1) * per), 'GT')
  end
end
local reset = now
if c > 0 then reset = (w + 1) * per end
return {f(w), f(c), '0', '0', '0', f(reset), f(now), f(grant)}
`

// The log's members are "<weight>:<member>" scored by Redis time; entries
// at or before now-period are dropped. A released lease is a negative
// entry at its grant's time, so it leaves the log with the grant. The key
// lives a period after its newest entry, so its TTL moves with each write.
const luaSlidingLog = luaPrelude + `
redis.call('ZREMRANGEBYSCORE', k, '-inf', f(now - per))
local m = ARGV[10]
local changed = false
if d > 0 then redis.call('ZADD', k, f(now), f(d) .. ':d:' .. m); changed = true end
if rel > 0 and relwin > now - per then
  redis.call('ZADD', k, f(relwin), f(-rel) .. ':r:' .. m); changed = true
end
local function sum()
  local e = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  local u, oldest, newest = 0, 0, 0
  for i = 1, #e, 2 do
    u = u + tonumber(string.match(e[i], '^[^:]+'))
    local at = tonumber(e[i + 1])
    if oldest == 0 then oldest = at end
    newest = at
  end
  return u, oldest, newest
end
local u, oldest, newest = sum()
local grant = 0
if want > 0 then
  grant = share(lim - u, lim)
  if grant > 0 then
    redis.call('ZADD', k, f(now), f(grant) .. ':g:' .. m)
    u, newest, changed = u + grant, now, true
    if oldest == 0 then oldest = now end
  end
end
if changed then redis.call('PEXPIREAT', k, ms(now + per)) end
local reset = now
if u > 0 then reset = newest + per end
return {'0', '0', '0', f(oldest), f(u), f(reset), f(now), f(grant)}
`

// Tokens may go below zero: the nodes admitted those events already, and
// the debt is paid back by the refill.
const luaTokenBucket = luaPrelude + `
local v = redis.call('HMGET', k, 'tk', 'ts', 'ef', 'en')
local tk = tonumber(v[1])
local ts = tonumber(v[2])
local ef = tonumber(v[3]) or now
local en0 = tonumber(v[4]) or 0
local en = math.max(0, en0 + d - rel)
local fresh = (ts == nil)
local rate = lim / per
if fresh then
  tk, ts = burst, now
elseif now > ts then
  tk = math.min(burst, tk + (now - ts) * rate)
  ts = now
end
local changed = d > 0 or rel > 0
tk = math.min(burst, tk - d + rel)
local grant = 0
if want > 0 then
  grant = pace(share(tk, burst), tk, ef, en0, en)
  if grant > 0 then tk = tk - grant; en = en + grant; changed = true end
end
if changed then
  redis.call('HSET', k, 'tk', f(tk), 'ts', f(ts), 'ef', f(ef), 'en', f(en))
  local full = ms(now + (burst - tk) / rate)
  if fresh then
    redis.call('PEXPIREAT', k, full, 'NX')
  else
    redis.call('PEXPIREAT', k, full, 'GT')
  end
end
local reset = now
if tk < burst then reset = now + math.ceil((burst - tk) / rate) end
return {'0', f(tk), '0', f(ts), '0', f(reset), f(now), f(grant)}
`

const luaGCRA = luaPrelude + `
local v = redis.call('HMGET', k, 't', 'ef', 'en')
local tat = tonumber(v[1])
local ef = tonumber(v[2]) or now
local en0 = tonumber(v[3]) or 0
local en = math.max(0, en0 + d - rel)
local fresh = (tat == nil)
local iv = per / lim
tat = math.max(tat or 0, now)
local changed = d > 0 or rel > 0
tat = math.max(now, tat + math.floor((d - rel) * iv + 0.5))
local grant = 0
if want > 0 then
  local h = burst - (tat - now) / iv
  grant = pace(share(h, burst), h, ef, en0, en)
  if grant > 0 then tat = tat + math.floor(grant * iv + 0.5); en = en + grant; changed = true end
end
if changed then
  redis.call('HSET', k, 't', f(tat), 'ef', f(ef), 'en', f(en))
  if fresh then
    redis.call('PEXPIREAT', k, ms(tat), 'NX')
  else
    redis.call('PEXPIREAT', k, ms(tat), 'GT')
  end
end
return {'0', '0', '0', f(tat), '0', f(tat), f(now), f(grant)}
`

// luaNodes registers this node (ARGV[1]) as live at Redis time and returns
// how many nodes were seen within ARGV[2] µs. KEYS[1] = "guardd:{fleet}:nodes".
const luaNodes = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], string.format('%.17g', now), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.17g', now - ttl))
redis.call('PEXPIRE', KEYS[1], math.ceil(ttl / 1000))
return redis.call('ZCARD', KEYS[1])
`

// luaPublish records a mitigation change: KEYS = active hash, expiry zset,
// stream (all tagged "{mitigations}"); ARGV = op ("add" or "del"), field,
// payload, expiry (unix ms), stream max length. It returns the stream ID.
const luaPublish = `
if ARGV[1] == 'add' then
  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
else
  redis.call('HDEL', KEYS[1], ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[2])
end
return redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[5], '*', 'op', ARGV[1], 'f', ARGV[2], 'p', ARGV[3])
`

// luaActive drops expired entries and returns {last stream ID, field,
// payload, field, payload ...}: the active set and the ID to read the
// stream from, so nothing published after the set was read is missed.
const luaActive = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local old = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, f in ipairs(old) do
  redis.call('HDEL', KEYS[1], f)
end
if #old > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end
local last = '0-0'
local x = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
if #x > 0 then last = x[1][1] end
local out = {last}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all do out[#out + 1] = all[i] end
return out
`
