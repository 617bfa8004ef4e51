-- f1 for LuaJIT (numbers are doubles; bit.band is the 32-bit AND).
local band = bit and bit.band or function(a, b) return a & b end
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
