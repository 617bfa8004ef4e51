/* N! mod M, M = 99999989. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 90000000;
    const uint64_t m = 99999989;
    uint64_t f = 1;
    uint64_t i = 1;
    while (i <= n) {
        f = f * i % m;
        i = i + 1;
    }
    printf("%llu\n", (unsigned long long)f);
    return 0;
}
