//! The TLC benchmark harness: `cargo run --release --example tlc_bench [--
//! --runs N] [--no-write]`.
//!
//! For f1, factorial, fibonacci and accumulator it times, in one run: the
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

#[allow(dead_code)]
#[path = "../tlc/asm.rs"]
mod asm;
#[allow(dead_code)]
#[path = "../tlc/interp.rs"]
mod interp;
#[path = "../tlc/programs.rs"]
mod programs;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use interp::tlc::{self, jit, Heap, Value};
use interp::Out;

const M: u64 = 99_999_989;

/// One benchmark: its TLC program, its peer file stem, and sizes.
struct Bench {
    name: &'static str,
    program: &'static str,
    peer: &'static str,
    /// (argument, repetitions) for native code and fast JITs.
    native: (i64, u64),
    /// For the JIT.
    jit: (i64, u64),
    /// For interpreters (jitgen's plain one, CPython, Lua 5.4).
    slow: (i64, u64),
}

const BENCHES: &[Bench] = &[
    Bench { name: "f1", program: "f1", peer: "f1", native: (2117, 1000), jit: (2117, 100), slow: (2117, 20) },
    Bench {
        name: "fact",
        program: "factorial",
        peer: "fact",
        native: (90_000_000, 1),
        jit: (90_000_000, 1),
        slow: (9_000_000, 1),
    },
    Bench {
        name: "fib",
        program: "fibonacci",
        peer: "fib",
        native: (90_000_000, 1),
        jit: (90_000_000, 1),
        slow: (9_000_000, 1),
    },
    Bench {
        name: "accum",
        program: "accumulator",
        peer: "accum",
        native: (100_000_000, 1),
        jit: (100_000_000, 1),
        slow: (10_000_000, 1),
    },
];

/// Inner iterations of a run (the unit of ns/iter).
fn inner(b: &Bench, (n, reps): (i64, u64)) -> f64 {
    match b.name {
        "f1" => reps as f64 * (n as f64) * (n as f64 + 1.0) / 2.0,
        _ => (n as f64) * reps as f64,
    }
}

// ----- the algorithms in Rust -------------------------------------------------

fn f1(n: i64) -> u64 {
    let mut x: u64 = 1;
    let mut i = 0;
    while i < n {
        let mut j = 0;
        while j <= i {
            j += 1;
            x = x.wrapping_add((i & j) as u64);
        }
        i += 1;
    }
    x
}

fn fact(n: u64) -> u64 {
    let mut f = 1;
    let mut i = 1;
    while i <= n {
        f = f * i % M;
        i += 1;
    }
    f
}

fn fib(n: u64) -> u64 {
    let (mut a, mut b, mut n) = (0, 1, n);
    while n > 0 {
        let t = (a + b) % M;
        a = b;
        b = t;
        n -= 1;
    }
    a
}

trait Accumulator {
    fn accumulate(&mut self, x: i64);
    fn value(&self) -> i64;
}
struct Count(i64);
struct Add(i64);
impl Accumulator for Count {
    fn accumulate(&mut self, _: i64) {
        self.0 += 1;
    }
    fn value(&self) -> i64 {
        self.0
    }
}
impl Accumulator for Add {
    fn accumulate(&mut self, x: i64) {
        self.0 += x;
    }
    fn value(&self) -> i64 {
        self.0
    }
}

fn accum(n: i64) -> i64 {
    let (mut obj, mut n): (Box<dyn Accumulator>, i64) =
        if n < 0 { (Box::new(Count(0)), -n) } else { (Box::new(Add(0)), n) };
    while n > 0 {
        obj.accumulate(black_box(n));
        n -= 1;
    }
    obj.value()
}

/// The Rust result of a benchmark at a size (also the expected value).
fn native(b: &Bench, (n, reps): (i64, u64)) -> String {
    match b.name {
        "f1" => (0..reps).fold(0u64, |s, _| s.wrapping_add(f1(black_box(n)))).to_string(),
        "fact" => fact(black_box(n as u64)).to_string(),
        "fib" => fib(black_box(n as u64)).to_string(),
        _ => accum(black_box(n)).to_string(),
    }
}

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

/// The first line a command prints of its version, if it runs.
fn version(cmd: &str, arg: &str) -> Option<String> {
    let o = Command::new(cmd).arg(arg).output().ok()?;
    let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
    String::from_utf8_lossy(&text).lines().next().map(|l| l.trim().to_string())
}

/// A peer: a name, a command line for a benchmark and size, and whether it
/// is slow (then it runs the small size).
struct Peer {
    name: String,
    version: String,
    slow: bool,
    cmd: Box<dyn Fn(&Bench, (i64, u64)) -> Vec<String>>,
}

fn peers(root: &Path, build: &Path) -> Vec<Peer> {
    let src = root.join("bench/peers");
    let mut v: Vec<Peer> = vec![];
    if let Some(ver) = version("gcc", "--version") {
        for opt in ["-O0", "-O2"] {
            let mut ok = true;
            for b in BENCHES {
                let out = build.join(format!("{}.gcc{}", b.peer, opt));
                let st =
                    Command::new("gcc").arg(opt).arg("-o").arg(&out).arg(src.join(format!("{}.c", b.peer))).status();
                ok &= st.is_ok_and(|s| s.success());
            }
            if ok {
                let build = build.to_path_buf();
                v.push(Peer {
                    name: format!("gcc {opt}"),
                    version: ver.clone(),
                    slow: false,
                    cmd: Box::new(move |b, s| {
                        vec![
                            build.join(format!("{}.gcc{}", b.peer, opt)).display().to_string(),
                            s.0.to_string(),
                            s.1.to_string(),
                        ]
                    }),
                });
            }
        }
    }
    let scripted: [(&str, &str, &str, bool); 5] = [
        ("pypy3", "pypy3", "py", false),
        ("luajit", "luajit", "lua", false),
        ("node", "node", "js", false),
        ("cpython", "python3", "py", true),
        ("lua5.4", "lua5.4", "lua", true),
    ];
    for (name, exe, ext, slow) in scripted {
        let arg = if exe.starts_with("lua") { "-v" } else { "--version" };
        let Some(ver) = version(exe, arg) else { continue };
        let src = src.clone();
        v.push(Peer {
            name: name.to_string(),
            version: ver,
            slow,
            cmd: Box::new(move |b, s| {
                vec![
                    exe.to_string(),
                    src.join(format!("{}.{ext}", b.peer)).display().to_string(),
                    s.0.to_string(),
                    s.1.to_string(),
                ]
            }),
        });
    }
    v
}

/// The arguments of a peer run: f1 takes n and REPS, the others N.
fn peer_args(b: &Bench, mut argv: Vec<String>) -> Vec<String> {
    if b.name != "f1" {
        argv.pop();
    }
    argv
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runs: usize = args.iter().position(|a| a == "--runs").and_then(|i| args.get(i + 1)?.parse().ok()).unwrap_or(5);
    let write = !args.iter().any(|a| a == "--no-write");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let build = root.join("target/bench");
    std::fs::create_dir_all(&build).expect("target/bench can be made");
    let peers = peers(&root, &build);
    let mut rows: Vec<Row> = vec![];
    let mut compile_notes: Vec<String> = vec![];
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
             (median; {:.2}-{:.2})",
            b.name,
            per_run(before.compilations, after.compilations),
            per_run(before.declined, after.declined),
            per_run(before.residual_ops, after.residual_ops),
            ms(median(&compiling)),
            ms(*compiling.iter().min().expect("runs")),
            ms(*compiling.iter().max().expect("runs")),
        ));
        row("TLC JIT, compilation included", b.jit, cold);
        // The residual code alone: warmed up in this thread first.
        tlc_run(&a, b.jit, true);
        row("TLC JIT, warm", b.jit, measure(runs, || timed(|| tlc_run(&a, b.jit, true)), &want_jit, "JIT warm"));
        for p in &peers {
            let size = if p.slow { b.slow } else { b.native };
            let want = native(b, size);
            let argv = peer_args(b, (p.cmd)(b, size));
            let times = measure(
                runs,
                || {
                    timed(|| {
                        let o = Command::new(&argv[0]).args(&argv[1..]).output().expect("the peer runs");
                        String::from_utf8_lossy(&o.stdout).trim().to_string()
                    })
                },
                &want,
                &p.name,
            );
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
    let small = small_inputs();
    println!("\n{small}");
    if write {
        let machine = machine();
        let mut versions = vec![version("rustc", "-V").unwrap_or_else(|| "rustc ?".into())];
        versions.extend(peers.iter().map(|p| format!("{}: {}", p.name, p.version)));
        let doc = format!(
            "# Benchmarks\n\nWritten by `cargo run --release --example tlc_bench` (the harness: \
             `examples/tlc_bench`; peer programs: `bench/peers`), {runs} runs per row.\n\n\
             Machine: {machine}\n\nVersions:\n{}\n\n\
             ns/iter = median time / inner iterations (f1: REPS x n(n+1)/2; fact, fib: N; accum: N calls). \
             In-process rows (rustc, TLC) time the computation; peer rows time whole processes (start-up included). \
             Interpreters run smaller sizes: compare ns/iter.\n\n{table}\nJIT work per run (compilation included; a process's first compilation also makes the \
             backend, which the median leaves out):\n\n{}\n\n\
             Small inputs: the JIT's total time against the plain interpreter's, each run in a fresh \
             thread (empty code caches), median of {SMALL_RUNS} runs; the hot-spot policy decides \
             whether the loop compiles.\n\n{small}",
            versions.iter().map(|v| format!("- {v}")).collect::<Vec<_>>().join("\n"),
            compile_notes.iter().map(|n| format!("- {n}")).collect::<Vec<_>>().join("\n"),
        );
        std::fs::write(root.join("BENCHMARKS.md"), doc).expect("BENCHMARKS.md is writable");
        eprintln!("wrote BENCHMARKS.md");
    }
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
