local n = tonumber(arg[1] or "90000000")
local m = 99999989
local a, b = 0, 1
while n > 0 do
  a, b = b, (a + b) % m
  n = n - 1
end
print(string.format("%.0f", a))
