//! Runs a program with subroutines interpreted and through the JIT, and
//! prints both times: `cargo run --release --example subroutines [-- N]
//! [--max-cases K] [--portal-listing] [--listing]` (the portal's code, or
//! `jit::specialize`'s, with their flexswitch cases).

use subroutines_interp::programs::COUNTDOWN;
use subroutines_interp::sub::{self, jit};

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
        "  compilations {} (flexswitch cases {}, misses {}), resumptions {}, compiling {:.2?}, {} residual operations",
        s.compilations,
        s.flexswitch_cases,
        s.flexswitch_misses,
        s.resumptions,
        std::time::Duration::from_nanos(s.compile_nanos),
        s.residual_ops
    );
    if args.iter().any(|a| a == "--portal-listing") {
        for l in jit::portal_listings() {
            println!("{l}");
        }
    }
    if args.iter().any(|a| a == "--listing") {
        let r = jit::specialize::run(COUNTDOWN);
        r.call(3).expect("countdown runs");
        println!("{}", r.listing_with_cases());
    }
}
