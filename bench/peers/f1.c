/* f1 of the PyPy JIT report, REPS times; prints the sum (64-bit wrapping). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t f1(long n) {
    uint64_t x = 1;
    long i = 0;
    while (i < n) {
        long j = 0;
        while (j <= i) {
            j = j + 1;
            x = x + (uint64_t)(i & j);
        }
        i = i + 1;
    }
    return x;
}

int main(int argc, char **argv) {
    volatile long n = argc > 1 ? atol(argv[1]) : 2117;
    long reps = argc > 2 ? atol(argv[2]) : 1000;
    uint64_t total = 0;
    for (long r = 0; r < reps; r++) total += f1(n);
    printf("%llu\n", (unsigned long long)total);
    return 0;
}
