/* F(N) by the doubly recursive definition (N = 30: 832040). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int64_t fib(int64_t n) {
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? strtoll(argv[1], 0, 10) : 30;
    printf("%lld\n", (long long)fib(n));
    return 0;
}
