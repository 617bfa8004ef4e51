//! Runs a program with subroutines interpreted and through the JIT, and
//! prints both times: `cargo run --release --example subroutines [-- N]`.

mod interp;

use interp::sub::{self, jit, CALL, DECR, HALT, JNZ, RET};

/// Counts `a` down through two nested calls per turn: `RET` pops the
/// return addresses 8 and 2, run-time values that decide where dispatch goes.
pub const COUNTDOWN: &[u8] = &[
    CALL, 6, // 0: call f
    JNZ, 0,    // 2: loop while a != 0
    HALT, // 4
    HALT, // 5: padding
    CALL, 9,    // 6: f: call g
    RET,  // 8
    DECR, // 9: g: a -= 1
    RET,  // 10
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
