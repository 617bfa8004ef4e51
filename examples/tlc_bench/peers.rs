//! The benchmarks of the TLC harness: their sizes, the same algorithms in
//! Rust (`rustc -O`, also the expected results), and the peer programs of
//! `bench/peers` run as processes. Shared by the harness and by
//! `tests/peers.rs`, which runs every installed peer once on a small input.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

/// The modulus of factorial and fibonacci (iterative).
const M: u64 = 99_999_989;

/// One benchmark: its TLC program, its peer file stem, and sizes.
pub struct Bench {
    pub name: &'static str,
    pub program: &'static str,
    pub peer: &'static str,
    /// (argument, repetitions) for native code and fast JITs.
    pub native: (i64, u64),
    /// For the JIT.
    pub jit: (i64, u64),
    /// For interpreters (jitgen's plain one, CPython, Lua 5.4).
    pub slow: (i64, u64),
}

pub const BENCHES: &[Bench] = &[
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
    Bench { name: "fibr", program: "fib_recursive", peer: "fibr", native: (35, 1), jit: (30, 1), slow: (30, 1) },
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
pub fn inner(b: &Bench, (n, reps): (i64, u64)) -> f64 {
    match b.name {
        "f1" => reps as f64 * (n as f64) * (n as f64 + 1.0) / 2.0,
        // Calls: 2 F(n + 1) - 1.
        "fibr" => reps as f64 * (2.0 * fibr(n + 1) as f64 - 1.0),
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

fn fibr(n: i64) -> i64 {
    if n < 2 {
        n
    } else {
        fibr(n - 1) + fibr(n - 2)
    }
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
pub fn native(b: &Bench, (n, reps): (i64, u64)) -> String {
    match b.name {
        "f1" => (0..reps).fold(0u64, |s, _| s.wrapping_add(f1(black_box(n)))).to_string(),
        "fact" => fact(black_box(n as u64)).to_string(),
        "fib" => fib(black_box(n as u64)).to_string(),
        "fibr" => fibr(black_box(n)).to_string(),
        _ => accum(black_box(n)).to_string(),
    }
}

/// The first line a command prints of its version, if it runs.
pub fn version(cmd: &str, arg: &str) -> Option<String> {
    let o = Command::new(cmd).arg(arg).output().ok()?;
    let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
    String::from_utf8_lossy(&text).lines().next().map(|l| l.trim().to_string())
}

/// A peer: a name, a command line for a benchmark and size, and whether it
/// is slow (then it runs the small size).
pub struct Peer {
    /// How the harness names it.
    pub name: String,
    /// The first line of its version.
    pub version: String,
    /// Whether it is an interpreter (it runs the small sizes).
    pub slow: bool,
    cmd: Box<dyn Fn(&Bench, (i64, u64)) -> Vec<String>>,
}

/// The peers installed here (gcc builds its programs into `build`).
pub fn peers(root: &Path, build: &Path) -> Vec<Peer> {
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

impl Peer {
    /// Runs benchmark `b` at `size` once: what it printed, or why it failed
    /// (it did not start, exited with an error, or printed something else
    /// than the Rust version's result).
    pub fn run(&self, b: &Bench, size: (i64, u64)) -> Result<String, String> {
        let argv = peer_args(b, (self.cmd)(b, size));
        let o = Command::new(&argv[0])
            .args(&argv[1..])
            .output()
            .map_err(|e| format!("`{}` did not start: {e}", argv.join(" ")))?;
        let got = String::from_utf8_lossy(&o.stdout).trim().to_string();
        if !o.status.success() {
            let err = String::from_utf8_lossy(&o.stderr);
            return Err(format!(
                "`{}` failed ({}): {}",
                argv.join(" "),
                o.status,
                err.lines().next().unwrap_or("").trim()
            ));
        }
        let want = native(b, size);
        if got != want {
            return Err(format!("`{}` printed {got:?}, expected {want:?}", argv.join(" ")));
        }
        Ok(got)
    }
}
