import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 90000000
m = 99999989
f = 1
i = 1
while i <= n:
    f = f * i % m
    i = i + 1
print(f)
