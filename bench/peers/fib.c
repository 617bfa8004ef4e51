/* F(N) mod M, iteratively, M = 99999989. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 90000000;
    const uint64_t m = 99999989;
    uint64_t a = 0, b = 1;
    while (n > 0) {
        uint64_t t = (a + b) % m;
        a = b;
        b = t;
        n = n - 1;
    }
    printf("%llu\n", (unsigned long long)a);
    return 0;
}
