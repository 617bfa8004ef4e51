/* The accumulator: a method called through a function pointer in the object. */
#include <stdio.h>
#include <stdlib.h>

typedef struct Obj {
    long value;
    void (*accumulate)(struct Obj *, long);
} Obj;

static void count(Obj *o, long x) { (void)x; o->value = o->value + 1; }
static void add(Obj *o, long x) { o->value = o->value + x; }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000;
    Obj obj = {0, add};
    if (n < 0) {
        obj.accumulate = count;
        n = -n;
    }
    while (n > 0) {
        obj.accumulate(&obj, n);
        n = n - 1;
    }
    printf("%ld\n", obj.value);
    return 0;
}
