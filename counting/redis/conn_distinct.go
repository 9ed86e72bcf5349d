package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"
)

// luaSketch merges a node's sketches of a key's two windows (KEYS[1] the
// current window, KEYS[2] the previous one, on one slot) into the fleet's
// and returns both merged sketches. ARGV[1] and ARGV[2] are the node's
// sketches in counting.Sketch's binary form (” reads only), ARGV[3] the
// TTL in ms a written sketch keeps.
//
// A sketch is 'S' and six bytes per value (fingerprint, register, rank) up
// to 32 values, or 'D' and 128 registers. The union of two exact sketches
// stays exact while it has at most 32 values; beyond, or with registers on
// either side, it is the maximum of the registers, which the entries'
// register and rank give without any bit arithmetic in Lua. The merge is
// idempotent: a merge retried after a missed deadline counts nothing
// twice.
const luaSketch = `
local function regs(s)
  if string.byte(s, 1) == 68 then return {string.byte(s, 2, 129)} end
  local r = {}
  for i = 1, 128 do r[i] = 0 end
  for j = 2, #s, 6 do
    local idx, rank = string.byte(s, j + 4, j + 5)
    if rank > r[idx + 1] then r[idx + 1] = rank end
  end
  return r
end
local function merge(v, a)
  if v == '' then return a end
  if string.byte(v, 1) == 83 and string.byte(a, 1) == 83 then
    local seen, parts, n = {}, {v}, (#v - 1) / 6
    for j = 2, #v, 6 do seen[string.sub(v, j, j + 3)] = true end
    for j = 2, #a, 6 do
      local f = string.sub(a, j, j + 3)
      if not seen[f] then
        seen[f] = true
        n = n + 1
        parts[#parts + 1] = string.sub(a, j, j + 5)
      end
    end
    if n <= 32 then return table.concat(parts) end
  end
  local r, o = regs(v), regs(a)
  for i = 1, 128 do if o[i] > r[i] then r[i] = o[i] end end
  return 'D' .. string.char(unpack(r))
end
local out = {}
for w = 1, 2 do
  local v = redis.call('GET', KEYS[w]) or ''
  local a = ARGV[w]
  if a ~= '' then
    local m = merge(v, a)
    if m ~= v then redis.call('SET', KEYS[w], m, 'PX', ARGV[3]) end
    v = m
  end
  out[w] = v
end
return out
`

var sketchScript = newScript(luaSketch)

// MergeSketches runs luaSketch once per op, pipelined (EVALSHA, EVAL when
// the server has not seen it), and stores each op's merged sketches or
// error in replies and errs (both as long as ops). It returns the first
// error.
func (c *Conn) MergeSketches(ctx context.Context, ops []SketchOp, replies [][2][]byte, errs []error) error {
	cl, err := c.get()
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return err
	}
	args := func(o *SketchOp) []string {
		return []string{string(o.Send[0]), string(o.Send[1]), strconv.FormatInt(o.TTL, 10)}
	}
	cmds := make(rueidis.Commands, 0, len(ops))
	for i := range ops {
		o := &ops[i]
		cmds = append(cmds, cl.B().Evalsha().Sha1(sketchScript.sha).Numkeys(2).Key(o.Key[0], o.Key[1]).Arg(args(o)...).Build())
	}
	var again []int
	for i, r := range cl.DoMulti(ctx, cmds...) {
		if re, ok := rueidis.IsRedisErr(r.Error()); ok && re.IsNoScript() {
			again = append(again, i)
			continue
		}
		replies[i], errs[i] = parseSketches(r)
	}
	if len(again) > 0 {
		cmds = cmds[:0]
		for _, i := range again {
			o := &ops[i]
			cmds = append(cmds, cl.B().Eval().Script(sketchScript.body).Numkeys(2).Key(o.Key[0], o.Key[1]).Arg(args(o)...).Build())
		}
		for j, r := range cl.DoMulti(ctx, cmds...) {
			replies[again[j]], errs[again[j]] = parseSketches(r)
		}
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("counting/redis: distinct %s: %w", ops[i].Key[0], err)
		}
	}
	return nil
}

func parseSketches(r rueidis.RedisResult) ([2][]byte, error) {
	var out [2][]byte
	v, err := r.ToArray()
	if err != nil {
		return out, err
	}
	if len(v) != 2 {
		return out, fmt.Errorf("script returned %d values, want 2", len(v))
	}
	for i := range v {
		s, err := v[i].ToString()
		if err != nil {
			return out, err
		}
		out[i] = []byte(s)
	}
	return out, nil
}
