//! The TLC benchmark harness: `cargo run --release --example tlc_bench [--
//! --runs N] [--no-write] [--others [--only NAME]] [--small]` (`--others`:
//! only the table of the other example interpreters, those whose name
//! contains NAME; `--small`: only the table of small inputs).
//!
//! For f1, factorial, fibonacci, recursive fibonacci and accumulator it times, in one run: the
//! plain TLC interpreter, the JIT including compilation (a fresh thread, so
//! fresh code caches), the JIT's residual code alone (warm, compiled by an
//! earlier run in the same thread), the same algorithms in Rust compiled into
//! this harness (`rustc -O`; accumulator through `dyn`), and the versions in
//! `bench/peers` under gcc -O0/-O2, PyPy, LuaJIT, Lua 5.4, Node and CPython
//! when they are installed (timed as whole processes, start-up included, as in
//! shared/notes/peer-benchmarks.md, whose algorithms, sizes and arithmetic they
//! follow). Every result is checked. It prints medians with their spread, ns
//! per inner iteration, and the ratios to `rustc -O` and to the interpreter,
//! and writes the table to BENCHMARKS.md, with a second one: the JIT's total
//! time against the interpreter's on small inputs, where compiling may not pay.

mod peers;

use tlc_interp as interp;
use tlc_interp::{asm, programs};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use interp::tlc::{self, jit, Heap, Value};
use interp::Out;

use peers::{inner, native, peers, version, BENCHES};

// ----- TLC ---------------------------------------------------------------------

fn tlc_run(a: &asm::Assembled, (n, reps): (i64, u64), use_jit: bool) -> String {
    let mut total: i64 = 0;
    for _ in 0..reps {
        let mut heap = Heap::default();
        let mut out = Out::default();
        let r = if use_jit {
            tlc::run(&a.program, n, &mut heap, &mut out)
        } else {
            jit::plain::run(&a.program, n, &mut heap, &mut out)
        };
        match r {
            Ok(Value::Int(v)) => total = total.wrapping_add(v),
            other => panic!("unexpected TLC result {other:?}"),
        }
    }
    total.to_string()
}

// ----- measuring ---------------------------------------------------------------

/// One row of the table.
struct Row {
    bench: &'static str,
    config: String,
    size: (i64, u64),
    times: Vec<Duration>,
    ns_iter: f64,
}

fn median(ts: &[Duration]) -> Duration {
    let mut v = ts.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn measure(runs: usize, mut f: impl FnMut() -> (String, Duration), want: &str, what: &str) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let (got, t) = f();
            assert_eq!(got.trim(), want, "{what}: wrong result");
            t
        })
        .collect()
}

fn timed(f: impl FnOnce() -> String) -> (String, Duration) {
    let t = Instant::now();
    let r = f();
    (r, t.elapsed())
}

/// The heading of BENCHMARKS.md's last section, measured by hand and kept
/// when the harness writes the file again.
const HAND_MEASURED: &str = "## Build and test times";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs: usize = args.iter().position(|a| a == "--runs").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(5);
    let write = !args.iter().any(|a| a == "--no-write");
    if args.iter().any(|a| a == "--others") {
        // Only the other interpreters' table (the rows whose interpreter
        // names `--only`'s text, if given), written nowhere.
        let only = args.iter().position(|a| a == "--only").and_then(|i| args.get(i + 1)).map_or("", |s| s.as_str());
        println!("{}", other_interpreters(runs, only));
        return;
    }
    if args.iter().any(|a| a == "--small") {
        // Only the small inputs' table, written nowhere.
        println!("{}", small_inputs());
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let build = root.join("target/bench");
    std::fs::create_dir_all(&build).expect("target/bench can be made");
    let peers = peers(&root, &build);
    let mut rows: Vec<Row> = vec![];
    let mut compile_notes: Vec<String> = vec![];
    let mut skipped: Vec<String> = vec![];
    for b in BENCHES {
        eprintln!("{}...", b.name);
        let a = asm::assemble(programs::source(b.program).expect("shipped")).expect("assembles");
        let mut row = |config: &str, size: (i64, u64), times: Vec<Duration>| {
            let ns_iter = median(&times).as_nanos() as f64 / inner(b, size);
            rows.push(Row { bench: b.name, config: config.to_string(), size, times, ns_iter });
        };
        // Native Rust, in process.
        let want = native(b, b.native);
        row("rustc -O (dyn for accum)", b.native, measure(runs, || timed(|| native(b, b.native)), &want, "rustc"));
        // The plain interpreter.
        let want_slow = native(b, b.slow);
        row(
            "TLC interpreter",
            b.slow,
            measure(runs, || timed(|| tlc_run(&a, b.slow, false)), &want_slow, "interpreter"),
        );
        // The JIT, compilation included: a fresh thread has empty code caches.
        let want_jit = native(b, b.jit);
        let before = jit::stats();
        let mut compiling: Vec<Duration> = vec![];
        let cold = measure(
            runs,
            || {
                let a = a.clone();
                let s0 = jit::stats().compile_nanos;
                let r = std::thread::spawn(move || timed(|| tlc_run(&a, b.jit, true))).join().expect("the JIT run");
                compiling.push(Duration::from_nanos(jit::stats().compile_nanos - s0));
                r
            },
            &want_jit,
            "JIT",
        );
        let after = jit::stats();
        let per_run = |x: u64, y: u64| (y - x) as f64 / runs as f64;
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        compile_notes.push(format!(
            "{}: {:.0} compilations, {:.0} declined, {:.0} residual operations per run; compiling {:.2} ms per run \
             (median; {:.2}-{:.2}; {:.2} of it on the compiler's thread, mean), {:.1} µs per residual operation; {}; \
             {:.1} fusions, {:.2} ms fusing per run (mean)",
            b.name,
            per_run(before.compilations, after.compilations),
            per_run(before.declined, after.declined),
            per_run(before.residual_ops, after.residual_ops),
            ms(median(&compiling)),
            ms(*compiling.iter().min().expect("runs")),
            ms(*compiling.iter().max().expect("runs")),
            per_run(before.background_compile_nanos, after.background_compile_nanos) / 1e6,
            ms(median(&compiling)) * 1e3 / per_run(before.residual_ops, after.residual_ops).max(1.0),
            match cases_per_op(&before, &after) {
                Some((us, ops)) => format!("flexswitch cases {us:.1} µs per residual operation ({ops} operations)"),
                None => "no flexswitch case".to_string(),
            },
            per_run(before.fusions, after.fusions),
            per_run(before.fusion_nanos, after.fusion_nanos) / 1e6,
        ));
        row("TLC JIT, compilation included", b.jit, cold);
        // The residual code alone: warmed up in this thread first.
        warm_up(|| drop(tlc_run(&a, b.jit, true)), jit::stats);
        row("TLC JIT, warm", b.jit, measure(runs, || timed(|| tlc_run(&a, b.jit, true)), &want_jit, "JIT warm"));
        for p in &peers {
            let size = if p.slow { b.slow } else { b.native };
            // A peer that fails (not installed right, or a wrong result) is
            // reported and left out of the table.
            let mut times = vec![];
            let mut failed = None;
            for _ in 0..runs {
                let t = Instant::now();
                match p.run(b, size) {
                    Ok(_) => times.push(t.elapsed()),
                    Err(why) => {
                        failed = Some(why);
                        break;
                    }
                }
            }
            if let Some(why) = failed {
                eprintln!("{}: {} skipped: {why}", b.name, p.name);
                skipped.push(format!("{} on {}: {why}", p.name, b.name));
                continue;
            }
            row(&p.name, size, times);
        }
    }
    // The table.
    let mut table = String::new();
    table.push_str("| benchmark | configuration | size | median s | min-max s | ns/iter | x rustc -O | speed-up over interpreter |\n");
    table.push_str("|---|---|---|---:|---:|---:|---:|---:|\n");
    for b in BENCHES {
        let of = |c: &str| rows.iter().find(|r| r.bench == b.name && r.config.starts_with(c)).map(|r| r.ns_iter);
        let (rust, interp) = (of("rustc").unwrap_or(f64::NAN), of("TLC interpreter").unwrap_or(f64::NAN));
        for r in rows.iter().filter(|r| r.bench == b.name) {
            let (lo, hi) = (r.times.iter().min().expect("runs"), r.times.iter().max().expect("runs"));
            let size = if b.name == "f1" { format!("{} x{}", r.size.0, r.size.1) } else { r.size.0.to_string() };
            table.push_str(&format!(
                "| {} | {} | {} | {:.3} | {:.3}-{:.3} | {:.2} | {:.2} | {:.1} |\n",
                b.name,
                r.config,
                size,
                median(&r.times).as_secs_f64(),
                lo.as_secs_f64(),
                hi.as_secs_f64(),
                r.ns_iter,
                r.ns_iter / rust,
                interp / r.ns_iter
            ));
        }
    }
    println!("{table}");
    for n in &compile_notes {
        println!("{n}");
    }
    for n in &skipped {
        println!("skipped: {n}");
    }
    let small = small_inputs();
    println!("\n{small}");
    let others = other_interpreters(runs, "");
    println!("\n{others}");
    if write {
        let machine = machine();
        let mut versions = vec![version("rustc", "-V").unwrap_or_else(|| "rustc ?".into())];
        versions.extend(peers.iter().map(|p| format!("{}: {}", p.name, p.version)));
        let doc = format!(
            "# Benchmarks\n\nWritten by `cargo run --release --example tlc_bench` (the harness: \
             `examples/tlc_bench`; peer programs: `bench/peers`), {runs} runs per row.\n\n\
             Machine: {machine}\n\nVersions:\n{}\n\n\
             ns/iter = median time / inner iterations (f1: REPS x n(n+1)/2; fact, fib: N; fibr: its 2 F(N+1) - 1 calls; accum: N calls). \
             In-process rows (rustc, TLC) time the computation; peer rows time whole processes (start-up included). \
             Interpreters run smaller sizes: compare ns/iter.\n\n{table}\nJIT work per run (compilation included; a process's first compilation also makes the \
             backend, which the median leaves out):\n\n{}\n\n\
             Small inputs: the JIT's total time against the plain interpreter's, each run in a fresh \
             thread (empty code caches), median of {SMALL_RUNS} runs; the hot-spot policy decides \
             whether the loop compiles.\n\n{small}\n\
             Other interpreters: the JIT in a fresh thread (compilation and the hot-spot policy's \
             warm-up included; median of {runs} runs), then in the thread that ran it, after runs \
             until one compiles nothing (warm), its runs alternating with the plain interpreter's \
             ({runs} to {PAIRS_AT_MOST} pairs, about a second of plain runs; medians of each). \
             Compiling: its time per residual operation over all of a row's runs, all compilations, \
             then flexswitch cases alone.\n\n{others}{}",
            versions.iter().map(|v| format!("- {v}")).collect::<Vec<_>>().join("\n"),
            compile_notes.iter().map(|n| format!("- {n}")).collect::<Vec<_>>().join("\n"),
            if skipped.is_empty() {
                String::new()
            } else {
                format!("\nPeers skipped (they failed):\n\n{}\n", skipped.iter().map(|n| format!("- {n}")).collect::<Vec<_>>().join("\n"))
            },
        );
        // The hand-measured section at the end (build and test times, which
        // this harness does not measure) is kept as it was.
        let kept = std::fs::read_to_string(root.join("BENCHMARKS.md")).unwrap_or_default();
        let kept = kept.find(HAND_MEASURED).map_or("", |at| &kept[at..]);
        let doc = if kept.is_empty() { doc } else { format!("{}\n\n{kept}", doc.trim_end()) };
        std::fs::write(root.join("BENCHMARKS.md"), doc).expect("BENCHMARKS.md is writable");
        eprintln!("wrote BENCHMARKS.md");
    }
}

/// A program of another example interpreter: its name, a run of it
/// (through the portal or plain) giving its result as text, and its
/// module's statistics (compilations, entries into compiled code).
type Other = (&'static str, &'static str, fn(bool) -> String, fn() -> jitgen::StatsSnapshot);

fn countdown(n: i64, use_jit: bool) -> String {
    use subroutines_interp::{programs::COUNTDOWN, sub};
    format!("{:?}", if use_jit { sub::run(COUNTDOWN, n) } else { sub::jit::plain::run(COUNTDOWN, n) })
}

fn stackvm_fib(n: i64, use_jit: bool) -> String {
    use stackvm_interp::vm::{jit, Vm};
    // One machine per thread, started again for each run, as an embedder
    // keeps its program (code is kept for the program's addresses).
    thread_local!(static VM: std::cell::RefCell<Option<(i64, Vm)>> = const { std::cell::RefCell::new(None) });
    VM.with(|vm| {
        let mut vm = vm.borrow_mut();
        if vm.as_ref().is_none_or(|(m, _)| *m != n) {
            *vm = Some((n, Vm::new(stackvm_interp::programs::recursive_fib(n))));
        }
        let (_, vm) = vm.as_mut().expect("made above");
        vm.restart();
        format!("{:?}", if use_jit { vm.run() } else { jit::plain::Vm::run(vm) })
    })
}

/// The machine kept in `vms` for `program`, made by `make` the first time.
fn kept_machine<'a, M>(
    vms: &'a mut Vec<(&'static str, M)>,
    program: &'static str,
    make: impl FnOnce() -> M,
) -> &'a mut M {
    let at = match vms.iter().position(|(p, _)| *p == program) {
        Some(at) => at,
        None => {
            vms.push((program, make()));
            vms.len() - 1
        }
    };
    &mut vms[at].1
}

/// A program of the VM whose frames own their locals, on one machine per
/// thread started again for each run (as [`stackvm_fib`]).
fn framevm(program: &'static str, use_jit: bool) -> String {
    use framevm_interp::programs::{ackermann, fib};
    use framevm_interp::vm::{jit, Machine};
    thread_local!(static VM: std::cell::RefCell<Vec<(&'static str, Machine)>> = const { std::cell::RefCell::new(Vec::new()) });
    VM.with(|vms| {
        let mut vms = vms.borrow_mut();
        let vm =
            kept_machine(&mut vms, program, || Machine::new(if program == "fib" { fib(27) } else { ackermann(3, 7) }));
        vm.restart();
        format!("{:?}", if use_jit { vm.run() } else { jit::plain::Machine::run(vm) })
    })
}

/// A program of the VM whose frames hold their function and instruction
/// pointer, on one machine per thread and program (as [`stackvm_fib`]).
fn funcvm(program: &'static str, use_jit: bool) -> String {
    use funcvm_interp::programs::{ackermann, fib};
    use funcvm_interp::vm::{jit, Vm};
    thread_local!(static VM: std::cell::RefCell<Vec<(&'static str, Vm)>> = const { std::cell::RefCell::new(Vec::new()) });
    VM.with(|vms| {
        let mut vms = vms.borrow_mut();
        let vm = kept_machine(&mut vms, program, || Vm::new(if program == "fib" { fib() } else { ackermann() }));
        vm.prepare(0, if program == "fib" { &[25] } else { &[3, 7] });
        format!("{:?}", if use_jit { vm.run() } else { jit::plain::Vm::run(vm) })
    })
}

/// The procedure VM (`interpreters/procvm`): its programs assembled once
/// per thread, as an embedder keeps its program.
fn procvm(program: &'static str, use_jit: bool) -> String {
    use procvm_interp::{asm::assemble, programs, vm};
    thread_local!(static CODE: [Vec<vm::Instruction>; 2] = [
        assemble(&programs::fib(25, "")).expect("assembles"),
        assemble(&programs::ackermann(2, 300, "")).expect("assembles"),
    ]);
    CODE.with(|c| {
        let code = &c[usize::from(program == "ack")];
        let mut out = vec![];
        let stack = if use_jit { vm::interpret(code, &mut out) } else { vm::jit::plain::interpret(code, &mut out) };
        format!("{stack:?}")
    })
}

/// The procedure VM's shape with its stack and frames in `self`
/// (`procvm_interp::framed`): a new machine per run, the programs kept per
/// thread.
fn procvm_framed(program: &'static str, use_jit: bool) -> String {
    use procvm_interp::framed::{programs, vm};
    thread_local!(static CODE: [Vec<vm::Op>; 2] = [programs::fib(25), programs::ackermann(2, 300)]);
    CODE.with(|c| {
        let code = &c[usize::from(program == "ack")];
        let mut m = vm::Vm::new();
        let r = if use_jit { m.run(code, usize::MAX) } else { vm::jit::plain::Vm::run(&mut m, code, usize::MAX) };
        format!("{r:?}")
    })
}

/// The same shape as a new user first writes it, indexing its stack
/// (`procvm_interp::indexed`): a new machine per run, the programs kept per
/// thread.
fn procvm_indexed(program: &'static str, use_jit: bool) -> String {
    use procvm_interp::indexed::{programs, vm};
    thread_local!(static CODE: [Vec<vm::Instr>; 2] = [programs::fib(30), programs::ackermann(2, 2000)]);
    CODE.with(|c| {
        let code = &c[usize::from(program == "ack")];
        let mut m = vm::Vm::new();
        let r = if use_jit { m.run(code) } else { vm::jit::plain::Vm::run(&mut m, code) };
        format!("{r:?}")
    })
}

/// The register VM (`interpreters/regvm`): one machine per thread and
/// program, its fields set again for each run, as an embedder keeps its
/// program (code is kept for the program's address).
fn regvm(program: &'static str, use_jit: bool) -> String {
    use regvm_interp::{programs, vm};
    thread_local!(static VM: std::cell::RefCell<Vec<(&'static str, vm::Vm)>> = const { std::cell::RefCell::new(Vec::new()) });
    VM.with(|vms| {
        let mut vms = vms.borrow_mut();
        let (code, pc) = if program == "fib" { programs::fib(25) } else { programs::sum(20_000) };
        let m = kept_machine(&mut vms, program, || vm::Vm::new(code, pc, 100_000));
        m.regs.clear();
        m.regs.resize(vm::WINDOW, 0);
        m.frames.clear();
        (m.pc, m.base, m.steps) = (pc, 0, 0);
        format!("{:?}", if use_jit { m.run() } else { vm::jit::plain::Vm::run(m) })
    })
}

fn recursive_fib(n: i64, use_jit: bool) -> String {
    use recursive_interp::{programs::fib, rec};
    // One program per thread, as an embedder keeps its program: code is
    // kept for the program's addresses (a fresh one compiles again).
    thread_local!(static FIB: Vec<rec::Function> = fib());
    FIB.with(|p| format!("{:?}", if use_jit { rec::call(p, 0, n) } else { rec::jit::plain::call(p, 0, n) }))
}

fn machine_fib(n: i64, use_jit: bool) -> String {
    use recursive_interp::{programs::fib, rec};
    thread_local!(static FIB: Vec<rec::Function> = fib());
    let mut m = rec::Machine { calls: 0, depth: 0, deepest: 0 };
    FIB.with(|p| format!("{:?}", if use_jit { m.run(p, 0, n) } else { rec::jit::plain::Machine::run(&mut m, p, 0, n) }))
}

/// Brainfuck's nested loops (`tape_interp::programs::nested_loops`) on a
/// tape kept per thread, `depth` loops of `turns` turns.
fn tape_loops(depth: usize, turns: u8, use_jit: bool) -> String {
    use tape_interp::bf;
    thread_local!(static CODE: std::cell::RefCell<Option<(Vec<u8>, Vec<usize>)>> = const { std::cell::RefCell::new(None) });
    CODE.with(|c| {
        let mut c = c.borrow_mut();
        let (code, jumps) = c.get_or_insert_with(|| {
            let code = tape_interp::programs::nested_loops(depth, turns);
            let jumps = tape_interp::jumps(&code).expect("balanced");
            (code, jumps)
        });
        let (mut tape, mut out) = ([0u8; 8], vec![]);
        if use_jit {
            bf::run(code, jumps, &mut tape, &mut out)
        } else {
            bf::jit::plain::run(code, jumps, &mut tape, &mut out)
        }
        format!("{tape:?} {out:?}")
    })
}

/// The other interpreters' programs with targets.
const OTHERS: &[Other] = &[
    ("subroutines", "countdown 3,000,000", |j| countdown(3_000_000, j), subroutines_interp::sub::jit::stats),
    ("subroutines", "countdown 30,000,000", |j| countdown(30_000_000, j), subroutines_interp::sub::jit::stats),
    ("stack VM", "recursive fib 25", |j| stackvm_fib(25, j), stackvm_interp::vm::jit::stats),
    ("stack VM, frames owning their locals", "recursive fib 27", |j| framevm("fib", j), framevm_interp::vm::jit::stats),
    ("stack VM, frames owning their locals", "Ackermann(3, 7)", |j| framevm("ack", j), framevm_interp::vm::jit::stats),
    ("stack VM, ip in its frames", "recursive fib 25", |j| funcvm("fib", j), funcvm_interp::vm::jit::stats),
    ("stack VM, ip in its frames", "Ackermann(3, 7)", |j| funcvm("ack", j), funcvm_interp::vm::jit::stats),
    ("stack VM, procedures (`Ret` promotes)", "recursive fib 25", |j| procvm("fib", j), procvm_interp::vm::jit::stats),
    ("stack VM, procedures (`Ret` promotes)", "Ackermann(2, 300)", |j| procvm("ack", j), procvm_interp::vm::jit::stats),
    (
        "stack VM, frames in `self` (`Ret` promotes)",
        "recursive fib 25",
        |j| procvm_framed("fib", j),
        procvm_interp::framed::vm::jit::stats,
    ),
    (
        "stack VM, frames in `self` (`Ret` promotes)",
        "Ackermann(2, 300)",
        |j| procvm_framed("ack", j),
        procvm_interp::framed::vm::jit::stats,
    ),
    (
        "stack VM as a new user writes it (`stack[off + i]`, `Ret` promotes)",
        "recursive fib 30",
        |j| procvm_indexed("fib", j),
        procvm_interp::indexed::vm::jit::stats,
    ),
    (
        "stack VM as a new user writes it (`stack[off + i]`, `Ret` promotes)",
        "Ackermann(2, 2000)",
        |j| procvm_indexed("ack", j),
        procvm_interp::indexed::vm::jit::stats,
    ),
    (
        "register VM, windowed calls checking their depth",
        "recursive fib 25",
        |j| regvm("fib", j),
        regvm_interp::vm::jit::stats,
    ),
    (
        "register VM, windowed calls checking their depth",
        "recursive sum 20000",
        |j| regvm("sum", j),
        regvm_interp::vm::jit::stats,
    ),
    ("calls recursing in Rust", "recursive fib 27", |j| recursive_fib(27, j), recursive_interp::rec::jit::stats),
    (
        "Brainfuck on a `&mut [u8]` tape",
        "4 nested loops, 10^8 decrements",
        |j| tape_loops(4, 100, j),
        tape_interp::bf::jit::stats,
    ),
    (
        "calls recursing in Rust, a method",
        "recursive fib 27",
        |j| machine_fib(27, j),
        recursive_interp::rec::jit::stats,
    ),
];

/// A table of the other interpreters' programs: plain, the JIT with its
/// compilation (a fresh thread), and the JIT warm.
fn other_interpreters(runs: usize, only: &str) -> String {
    let mut table = String::from(
        "| interpreter | program | plain ms | JIT ms, compilation included | JIT ms, warm | speed-up, compilation included | speed-up, warm | compiling µs per residual operation: all; flexswitch cases (their operations) |\n|---|---|---:|---:|---:|---:|---:|---|\n",
    );
    for &(name, program, run, stats) in OTHERS.iter().filter(|o| o.0.contains(only)) {
        eprintln!("{name} {program}...");
        let before = stats();
        let (want, once) = timed(|| run(false));
        let cold = median(&measure(
            runs,
            || std::thread::spawn(move || timed(|| run(true))).join().expect("the JIT run"),
            &want,
            "JIT",
        ));
        warm_up(|| drop(run(true)), stats);
        // Plain and warm runs alternate, so that a shared machine that runs
        // slower for a while (its other tenants busy) weighs on both alike;
        // short programs run more pairs (about a second of plain runs).
        let pairs = ((1.0 / once.as_secs_f64().max(1e-6)) as usize).clamp(runs, PAIRS_AT_MOST);
        let (mut plain, mut warm) = (vec![], vec![]);
        for _ in 0..pairs {
            plain.extend(measure(1, || timed(|| run(false)), &want, "plain"));
            warm.extend(measure(1, || timed(|| run(true)), &want, "JIT warm"));
        }
        let (plain, warm) = (median(&plain), median(&warm));
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let after = stats();
        let all = (after.compile_nanos - before.compile_nanos) as f64
            / 1e3
            / ((after.residual_ops - before.residual_ops) as f64).max(1.0);
        table.push_str(&format!(
            "| {name} | {program} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} | {all:.1}; {} |\n",
            ms(plain),
            ms(cold),
            ms(warm),
            ms(plain) / ms(cold),
            ms(plain) / ms(warm),
            cases_per_op(&before, &after).map_or("none".to_string(), |(us, ops)| format!("{us:.1} ({ops})"))
        ));
    }
    table
}

/// What compiling flexswitch cases cost per residual operation between two
/// snapshots of a module's counters (over every run between them, as a
/// total: cases are compiled in the first runs only), or that none were.
fn cases_per_op(before: &jitgen::StatsSnapshot, after: &jitgen::StatsSnapshot) -> Option<(f64, u64)> {
    let ops = after.case_residual_ops - before.case_residual_ops;
    let nanos = after.case_compile_nanos - before.case_compile_nanos;
    (ops > 0).then(|| (nanos as f64 / 1e3 / ops as f64, ops))
}

/// The most pairs of plain and warm runs [`other_interpreters`] times.
const PAIRS_AT_MOST: usize = 101;

/// Runs `run` in this thread until a run enters compiled code and neither
/// compiles, hands code to the compiler's thread, fuses, postpones a fusion,
/// nor puts a case off past the call's budget, the last four runs having
/// entered code (the hot-spot policy may wait a few runs before compiling,
/// code compiled beside the interpreter is installed in a later run, and
/// fusing waits until code has run a while: a run that compiles nothing may
/// not have entered any code either; suspect code is compared with runs
/// interpreted on purpose, which enter none), or for at most 10 s.
fn warm_up(mut run: impl FnMut(), stats: fn() -> jitgen::StatsSnapshot) {
    let start = Instant::now();
    let mut entered = 0;
    while start.elapsed() < Duration::from_secs(10) {
        let before = stats();
        run();
        let after = stats();
        entered = if after.entries > before.entries { entered + 1 } else { 0 };
        if entered >= 4
            && after.compilations == before.compilations
            && after.background_submissions == before.background_submissions
            && after.fusions == before.fusions
            && after.fusions_postponed == before.fusions_postponed
            && after.cases_put_off == before.cases_put_off
        {
            return;
        }
    }
    eprintln!("(not warm after 10 s: {:?})", stats());
}

/// Runs per size in [`small_inputs`] (they are short: medians of many).
const SMALL_RUNS: usize = 21;

/// Sizes from tens of microseconds interpreted up past the point where the
/// loop compiles (under the default hot-spot policy).
const SMALL_SIZES: &[(&str, &[i64])] = &[
    ("f1", &[30, 100, 400, 700]),
    ("factorial", &[1000, 10_000, 100_000, 200_000, 300_000]),
    ("fibonacci", &[1000, 10_000, 100_000, 200_000, 300_000]),
    ("accumulator", &[1000, 10_000, 30_000, 80_000]),
    ("fib_recursive", &[10, 15, 20, 25]),
];

/// A table of the JIT's total time against the plain interpreter's on small
/// inputs, where compiling may not pay (the hot-spot policy at work).
fn small_inputs() -> String {
    let mut table = String::from(
        "| program | input | interpreter µs | JIT µs | JIT / interpreter | compilations per run |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for &(program, sizes) in SMALL_SIZES {
        eprintln!("{program}, small inputs...");
        let a = asm::assemble(programs::source(program).expect("shipped")).expect("assembles");
        for &n in sizes {
            let (mut plain, mut jitted) = (vec![], vec![]);
            let before = jit::stats();
            for _ in 0..SMALL_RUNS {
                for (use_jit, times) in [(false, &mut plain), (true, &mut jitted)] {
                    let a = a.clone();
                    let (r, t) =
                        std::thread::spawn(move || timed(|| tlc_run(&a, (n, 1), use_jit))).join().expect("runs");
                    times.push((r, t));
                }
            }
            let compilations = (jit::stats().compilations - before.compilations) as f64 / SMALL_RUNS as f64;
            assert!(plain.iter().chain(&jitted).all(|(r, _)| *r == plain[0].0), "{program}({n}): results differ");
            let med =
                |v: &[(String, Duration)]| median(&v.iter().map(|(_, t)| *t).collect::<Vec<_>>()).as_secs_f64() * 1e6;
            let (p, j) = (med(&plain), med(&jitted));
            table.push_str(&format!("| {program} | {n} | {p:.1} | {j:.1} | {:.2} | {compilations:.2} |\n", j / p));
        }
    }
    table
}

/// What the machine is: CPU model, cores, kernel, load.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    format!(
        "{cpu}, {cores} cores, Linux {}, load average at the end {}",
        kernel.trim(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    )
}
