#!/usr/bin/env bash
# The Crafting Interpreters benchmarks, whole processes: clox against lox
# with the JIT on (the default), and with it off (JITGEN_OFF=1).
#
#   bash bench/lox.sh SUITE_DIR [RUNS]
#
# SUITE_DIR is a checkout of munificent/craftinginterpreters (DEVELOPERS.md
# says how to get one): clox is built from its `c/` as shipped (NaN boxing
# on) with `gcc -O3 -flto -DNDEBUG`, and the programs are its
# `test/benchmark/*.lox`. Prints one Markdown row per benchmark: the best of
# RUNS (default 3) wall-clock seconds of each, the ratios to clox, and the
# peak RSS of each in MB. Outputs are compared with clox's (lines that are
# timings, decimal numbers, left out); a program clox refuses (exit 65)
# must be refused by lox too. `zoo_batch` runs for a fixed time and is
# left out. Then fib(35), the `fib` benchmark's function, in the peers that
# are installed (LuaJIT, PyPy, Node: `bench/peers/fibr.*`), best of RUNS.
set -euo pipefail
suite=${1:?usage: bash bench/lox.sh SUITE_DIR [RUNS]}
runs=${2:-3}
cd "$(dirname "$0")/.."
mkdir -p target/bench
gcc -O3 -flto -DNDEBUG "$suite"/c/*.c -o target/bench/clox -lm
cargo build --release -p lox >/dev/null 2>&1
lox=target/release/lox
clox=target/bench/clox

# The best of $runs wall-clock seconds and the largest peak RSS (KB) of a
# command, as "seconds kb"; its output of the last run in $out.
best() {
  local best="" kb=0 t0 t1 s m
  for _ in $(seq "$runs"); do
    t0=$(date +%s.%N)
    /usr/bin/time -f %M -o "$tmp/rss" "$@" >"$out" 2>"$tmp/err" || true
    t1=$(date +%s.%N)
    s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    m=$(tail -1 "$tmp/rss")
    if [ -z "$best" ] || awk -v s="$s" -v b="$best" 'BEGIN { exit !(s < b) }'; then best=$s; fi
    [ "$m" -gt "$kb" ] && kb=$m
  done
  echo "$best $kb"
}
results() { grep -Ev '^-?[0-9]+\.[0-9]+(e[-+][0-9]+)?$' "$1" || true; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| benchmark | clox s | lox s | lox JITGEN_OFF=1 s | lox / clox | off / clox | clox MB | lox MB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for f in "$suite"/test/benchmark/*.lox; do
  name=$(basename "$f" .lox)
  [ "$name" = zoo_batch ] && continue
  out=$tmp/clox.out; read -r c ckb < <(best "$clox" "$f")
  if grep -q "Error" "$tmp/err"; then
    out=$tmp/lox.out; "$lox" "$f" >"$out" 2>"$tmp/lerr" && { echo "lox.sh: $name: clox refuses it, lox runs it" >&2; exit 1; }
    echo "| $name | refused | refused | refused | | | | |"
    continue
  fi
  out=$tmp/lox.out; read -r l lkb < <(best "$lox" "$f")
  if ! diff -q <(results "$tmp/clox.out") <(results "$tmp/lox.out") >/dev/null; then
    echo "lox.sh: $name: lox's output differs from clox's" >&2; exit 1
  fi
  out=$tmp/off.out; read -r o _ < <(JITGEN_OFF=1 best "$lox" "$f")
  awk -v n="$name" -v c="$c" -v l="$l" -v o="$o" -v ck="$ckb" -v lk="$lkb" 'BEGIN {
    printf "| %s | %.3f | %.3f | %.3f | %.2f | %.2f | %.1f | %.1f |\n", n, c, l, o, l / c, o / c, ck / 1024, lk / 1024 }'
done

# The same function in other languages' fastest implementations.
line="fib(35), the same function, best of $runs:"
for peer in "luajit bench/peers/fibr.lua" "pypy3 bench/peers/fibr.py" "node bench/peers/fibr.js"; do
  exe=${peer%% *}
  command -v "$exe" >/dev/null 2>&1 || continue
  out=$tmp/peer.out; read -r t _ < <(best $peer 35)
  grep -qx 9227465 "$tmp/peer.out" || { echo "lox.sh: $exe: fib(35) is not 9227465" >&2; exit 1; }
  line="$line $exe $t s,"
done
echo
echo "${line%,}"
