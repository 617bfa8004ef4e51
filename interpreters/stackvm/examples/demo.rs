//! The README's quick start: the stack VM of its walkthrough
//! (`interpreters/stackvm`), each program run by the interpreter
//! (`jit::plain`), then twice through the portal on one machine: the first
//! run includes the warm-up and compiling, and the best of five more shows
//! what the compiled code does (`cargo run --profile demo -p stackvm-interp
//! --example demo`).

use std::time::{Duration, Instant};

use stackvm_interp::programs::{counted_loop, procedure_in_a_loop, recursive_fib};
use stackvm_interp::vm::{jit, Vm, VmError};

/// Runs `f` once; its result and how long it took.
fn timed(f: impl FnOnce() -> Result<i64, VmError>) -> (Result<i64, VmError>, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

fn main() {
    println!("The stack VM of interpreters/stackvm: its interpreter, and the JIT jitgen generated from it");
    println!("  JIT, first run: the warm-up and compiling included");
    println!("  JIT, warm: the best of five more runs on the same machine, its code compiled");
    println!(
        "{:<26} {:>18} {:>12} {:>12} {:>8} {:>12} {:>8}",
        "program", "result", "interpreted", "JIT, first", "speedup", "JIT, warm", "speedup"
    );
    for (name, code) in [
        ("counted loop(10^7)", counted_loop(10_000_000)),
        ("procedure in a loop(10^6)", procedure_in_a_loop(1_000_000)),
        ("recursive fib(27)", recursive_fib(27)),
    ] {
        let (want, plain) = timed(|| jit::plain::Vm::run(&mut Vm::new(code.clone())));
        let mut vm = Vm::new(code);
        let (first, t_first) = timed(|| vm.run());
        assert_eq!(first, want, "{name}: the JIT disagrees with the interpreter");
        let mut t_warm = Duration::MAX;
        for _ in 0..5 {
            vm.restart();
            let (warm, t) = timed(|| vm.run());
            assert_eq!(warm, want, "{name}: the JIT disagrees with the interpreter");
            t_warm = t_warm.min(t);
        }
        let ratio = |t: Duration| plain.as_secs_f64() / t.as_secs_f64();
        let shown = want.map_or_else(|e| format!("{e:?}"), |v| v.to_string());
        println!(
            "{:<26} {:>18} {:>12.2?} {:>12.2?} {:>7.1}x {:>12.2?} {:>7.1}x",
            name,
            shown,
            plain,
            t_first,
            ratio(t_first),
            t_warm,
            ratio(t_warm)
        );
    }
    let s = jit::stats();
    println!(
        "compilations {}, residual operations {}, compile time {:.2?}, declined {}",
        s.compilations,
        s.residual_ops,
        Duration::from_nanos(s.compile_nanos),
        s.declined
    );
}
