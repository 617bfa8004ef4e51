import sys


def f1(n):
    x = 1
    i = 0
    while i < n:
        j = 0
        while j <= i:
            j = j + 1
            x = x + (i & j)
        i = i + 1
    return x


n = int(sys.argv[1]) if len(sys.argv) > 1 else 2117
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
total = 0
r = 0
while r < reps:
    total = total + f1(n)
    r = r + 1
print(total & 0xFFFFFFFFFFFFFFFF)
