import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 90000000
m = 99999989
a, b = 0, 1
while n > 0:
    a, b = b, (a + b) % m
    n = n - 1
print(a)
