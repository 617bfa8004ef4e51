-- f1 for LuaJIT and Lua 5.4. LuaJIT has no `&` operator and cannot even parse
-- it: it gets bit.band (the 32-bit AND; i and j stay below 2^31), and Lua 5.4
-- compiles its `&` from a string that LuaJIT never reads.
local band = bit and bit.band or load("return function(a, b) return a & b end")()
local function f1(n)
  local x, i = 1, 0
  while i < n do
    local j = 0
    while j <= i do
      j = j + 1
      x = x + band(i, j)
    end
    i = i + 1
  end
  return x
end
local n = tonumber(arg[1] or "2117")
local reps = tonumber(arg[2] or "1000")
local total = 0
for _ = 1, reps do total = total + f1(n) end
print(string.format("%.0f", total))
