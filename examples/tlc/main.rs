//! TLC through jitgen: `cargo run --release --example tlc -- FILE [ARG]
//! [--no-jit] [--stats] [--listing]` runs a program; with no file it runs the
//! shipped benchmark programs interpreted and compiled and prints their times.

use tlc_interp as interp;
use tlc_interp::{asm, programs};

use std::process::ExitCode;
use std::time::{Duration, Instant};

use interp::tlc::{self, jit, Heap};
use interp::{describe, Out};

/// Runs an assembled program through the JIT (or the plain interpreter).
fn run(a: &asm::Assembled, input: i64, use_jit: bool, out: &mut Out) -> (Result<String, String>, Heap) {
    let mut heap = Heap::default();
    let r = if use_jit {
        tlc::run(&a.program, input, &mut heap, out)
    } else {
        jit::plain::run(&a.program, input, &mut heap, out)
    };
    let r = r.map(|v| interp::show(&heap, v)).map_err(|e| describe(&e, &a.strings));
    (r, heap)
}

fn time<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// Each benchmark program, interpreted and compiled, with their times.
fn demo() -> ExitCode {
    println!("TLC benchmarks: plain interpreter vs generated JIT (this machine)");
    println!("  JIT, first run: compilation and the warm-up included (a loop compiles once it is hot");
    println!("  and the run has lasted a few compile times, so short runs never pay for compiling)");
    println!("  JIT, warm: the same program again, its code compiled: what the residual code does");
    println!(
        "{:<14} {:>10} {:>12} {:>12} {:>8} {:>12} {:>8}",
        "program(n)", "result", "interpreted", "JIT, first", "speedup", "JIT, warm", "speedup"
    );
    for (name, n) in [("f1", 2117), ("factorial", 9_000_000), ("fibonacci", 9_000_000), ("accumulator", 3_000_000)] {
        let a = asm::assemble(programs::source(name).expect("shipped")).expect("shipped programs assemble");
        let mut out = Out::default();
        let ((plain, _), t_plain) = time(|| run(&a, n, false, &mut out));
        let ((jitted, _), t_jit) = time(|| run(&a, n, true, &mut out));
        let ((warm, _), t_warm) = time(|| run(&a, n, true, &mut out));
        assert_eq!(plain, jitted, "{name}: the JIT disagrees with the interpreter");
        assert_eq!(plain, warm, "{name}: the JIT disagrees with the interpreter");
        let shown = plain.unwrap_or_else(|e| e);
        let ratio = |t: Duration| t_plain.as_secs_f64() / t.as_secs_f64();
        println!(
            "{:<14} {:>10} {:>12.2?} {:>12.2?} {:>7.1}x {:>12.2?} {:>7.1}x",
            format!("{name}({n})"),
            shown,
            t_plain,
            t_jit,
            ratio(t_jit),
            t_warm,
            ratio(t_warm)
        );
    }
    let s = jit::stats();
    println!(
        "compilations {}, declined {}, residual ops {}, compile time {:.2?}",
        s.compilations,
        s.declined,
        s.residual_ops,
        Duration::from_nanos(s.compile_nanos)
    );
    if let Some(why) = jit::last_decline() {
        println!("last decline: {why}");
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    // `--threshold N`: merge point visits before a position is compiled.
    let mut positional: Vec<&String> = vec![];
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--threshold" {
            match it.next().and_then(|n| n.parse().ok()) {
                Some(n) => jit::config().set_threshold(n),
                None => {
                    eprintln!("error: --threshold takes a number");
                    return ExitCode::from(2);
                }
            }
        } else if !a.starts_with("--") {
            positional.push(a);
        }
    }
    let Some(file) = positional.first() else { return demo() };
    let input: i64 = match positional.get(1).map(|s| s.parse()) {
        None => 0,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("error: the argument must be an integer");
            return ExitCode::from(2);
        }
    };
    let src = match programs::source(file) {
        Some(s) => s.to_string(),
        None => match std::fs::read_to_string(file) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot read {file}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let a = match asm::assemble(&src) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let mut out = Out { echo: true, ..Out::default() };
    let ((r, _), t) = time(|| run(&a, input, !flag("--no-jit"), &mut out));
    let code = match r {
        Ok(v) => {
            println!("{v}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    };
    if flag("--stats") {
        eprintln!("time {t:.2?}; {:?}", jit::stats());
        if let Some(why) = jit::last_decline() {
            eprintln!("last decline: {why}");
        }
    }
    if flag("--listing") {
        for l in jit::portal_listings() {
            eprintln!("{l}");
        }
    }
    code
}
