//! Runs a program with subroutines interpreted and through the JIT, and
//! prints both times: `cargo run --release --example subroutines [-- N]`.

use subroutines_interp::sub::{self, jit, ADD, CALL, DECR, HALT, JNZ, RET};

/// Counts `a` down: each turn calls a subroutine from three sites, and the
/// subroutine calls another. `RET` pops return addresses (2, 4, 6 and 16),
/// run-time values on the stack that decide where dispatch goes on.
pub const COUNTDOWN: &[u8] = &[
    CALL, 14, // 0: call f
    CALL, 14, // 2: call f
    CALL, 14, // 4: call f
    DECR, DECR, DECR, DECR, // 6: a -= 4
    JNZ, 0, // 10: loop while a != 0
    HALT, HALT, // 12
    CALL, 17,  // 14: f: call g
    RET, // 16
    ADD, 1,   // 17: g: a += 1
    RET, // 19
];

fn time<T>(f: impl FnOnce() -> T) -> (T, std::time::Duration) {
    let t = std::time::Instant::now();
    let r = f();
    (r, t.elapsed())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: i64 = args.iter().find_map(|s| s.parse().ok()).unwrap_or(3_000_000);
    // `--max-cases K`: cases per flexswitch (0: every return goes to the
    // interpreter, to see what a hand-over costs).
    if let Some(k) = args.iter().position(|a| a == "--max-cases").and_then(|i| args.get(i + 1)?.parse().ok()) {
        jit::config().set_max_cases(k);
    }
    let (plain, t_plain) = time(|| jit::plain::run(COUNTDOWN, n));
    let (jitted, t_jit) = time(|| sub::run(COUNTDOWN, n));
    assert_eq!(plain, jitted);
    println!("subroutines countdown({n}) = {plain:?}");
    println!("  interpreted {:>10.2?}", t_plain);
    println!("  JIT         {:>10.2?}  ({:.1}x)", t_jit, t_plain.as_secs_f64() / t_jit.as_secs_f64());
    let s = jit::stats();
    println!(
        "  compilations {} (flexswitch cases {}, misses {}), resumptions {}",
        s.compilations, s.flexswitch_cases, s.flexswitch_misses, s.resumptions
    );
    if args.iter().any(|a| a == "--listing") {
        let r = jit::specialize::run(COUNTDOWN);
        r.call(3).expect("countdown runs");
        println!("{}", r.listing_with_cases());
    }
}
