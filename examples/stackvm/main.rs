//! The tutorial stack VM's benchmark: `cargo run --release --example stackvm
//! [-- N] [--runs R]`.
//!
//! Times, in one run, the counted loop (sum of 1..=N, locals in the operand
//! stack), the procedure-in-a-loop program and recursive fibonacci: plain (`jit::plain`), the
//! portal with compilation off (`set_enabled(false)`, as `JITGEN_OFF=1`),
//! and the portal compiling (where it declines, what declining costs).
//! Prints medians and the ratios to plain, and the portal's last decline.

#[path = "../common/timing.rs"]
mod timing;

use std::time::Instant;

use timing::{median, size_and_runs};

use stackvm_interp::programs::{counted_loop, procedure_in_a_loop, recursive_fib};
use stackvm_interp::vm::{jit, Vm};

fn main() {
    let (n, runs) = size_and_runs(10_000_000);
    println!("stackvm, N = {n}, median of {runs} runs");
    println!("{:<22} {:>12} {:>12} {:>12} {:>9} {:>9}", "program", "plain", "JIT off", "JIT", "off/plain", "plain/JIT");
    // fib(k) makes about 1.6^k calls: k grows with the log of N.
    let k = ((n.max(2) as f64).ln() / 1.618f64.ln()).round() as i64 - 6;
    let fib_name = format!("recursive fib({k})");
    for (name, code) in [
        ("counted loop", counted_loop(n)),
        ("procedure in a loop", procedure_in_a_loop(n / 4)),
        (fib_name.as_str(), recursive_fib(k)),
    ] {
        let want = jit::plain::Vm::run(&mut Vm::new(code.clone()));
        let time = |f: &dyn Fn() -> Result<i64, stackvm_interp::vm::VmError>| {
            median(
                (0..runs)
                    .map(|_| {
                        let t = Instant::now();
                        let r = f();
                        let d = t.elapsed();
                        assert_eq!(r, want, "{name}");
                        d
                    })
                    .collect(),
            )
        };
        let plain = time(&|| jit::plain::Vm::run(&mut Vm::new(code.clone())));
        jit::config().set_enabled(false);
        let off = time(&|| Vm::new(code.clone()).run());
        jit::config().set_enabled(true);
        let on = time(&|| Vm::new(code.clone()).run());
        println!(
            "{:<22} {:>12.2?} {:>12.2?} {:>12.2?} {:>8.2}x {:>8.1}x",
            name,
            plain,
            off,
            on,
            off.as_secs_f64() / plain.as_secs_f64(),
            plain.as_secs_f64() / on.as_secs_f64()
        );
    }
    let s = jit::stats();
    println!("compilations {}, entries {}, last decline: {:?}", s.compilations, s.entries, jit::last_decline());
}
