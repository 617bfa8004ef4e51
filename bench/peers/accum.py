import sys


class Count:
    def __init__(self):
        self.value = 0

    def accumulate(self, x):
        self.value = self.value + 1


class Add:
    def __init__(self):
        self.value = 0

    def accumulate(self, x):
        self.value = self.value + x


n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000000
if n < 0:
    obj = Count()
    n = -n
else:
    obj = Add()
while n > 0:
    obj.accumulate(n)
    n = n - 1
print(obj.value)
