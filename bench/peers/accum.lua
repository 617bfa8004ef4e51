local Count = {}
Count.__index = Count
function Count:accumulate(x) self.value = self.value + 1 end
local Add = {}
Add.__index = Add
function Add:accumulate(x) self.value = self.value + x end
local n = tonumber(arg[1] or "100000000")
local obj
if n < 0 then obj = setmetatable({ value = 0 }, Count); n = -n else obj = setmetatable({ value = 0 }, Add) end
while n > 0 do
  obj:accumulate(n)
  n = n - 1
end
print(string.format("%.0f", obj.value))
