local n = tonumber(arg[1] or "90000000")
local m = 99999989
local f, i = 1, 1
while i <= n do
  f = (f * i) % m
  i = i + 1
end
print(string.format("%.0f", f))
