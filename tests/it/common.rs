//! Helpers shared by the integration tests.
#![allow(dead_code)]

/// The blocks of a listing: label and body (the lines after the label's).
fn blocks_of(listing: &str) -> Vec<(String, String)> {
    let mut blocks = vec![];
    let mut cur: Option<(String, String)> = None;
    for line in listing.lines() {
        if !line.starts_with(' ') {
            blocks.extend(cur.take());
            cur = Some((line.split(['(', ':']).next().unwrap_or("").to_string(), String::new()));
        } else if let Some((_, body)) = &mut cur {
            body.push_str(line);
            body.push('\n');
        }
    }
    blocks.extend(cur);
    blocks
}

/// The blocks of a listing that lie on a cycle of jumps and branches (the
/// bodies of its loops).
pub fn cyclic_blocks(listing: &str) -> Vec<String> {
    let blocks = blocks_of(listing);
    let succs = |body: &str| -> Vec<usize> {
        let term = body.lines().last().unwrap_or("").trim_start();
        if !(term.starts_with("jump") || term.starts_with("branch")) {
            return vec![];
        }
        term.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.starts_with('L'))
            .filter_map(|w| blocks.iter().position(|b| b.0 == w))
            .collect()
    };
    let mut out = vec![];
    for (k, (_, body)) in blocks.iter().enumerate() {
        let mut seen = vec![false; blocks.len()];
        let mut stack = succs(body);
        while let Some(j) = stack.pop() {
            if !std::mem::replace(&mut seen[j], true) {
                stack.extend(succs(&blocks[j].1));
            }
        }
        if seen[k] {
            out.push(body.clone());
        }
    }
    out
}

/// A small deterministic generator of random programs (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }

    /// A program of 1 to `max_pairs` byte pairs (op, k): each op below
    /// `ops`, each k below the number of pairs (a jump target).
    #[allow(dead_code)]
    pub fn op_pairs(&mut self, max_pairs: u64, ops: u64) -> Vec<u8> {
        let pairs = 1 + self.below(max_pairs);
        let mut code = vec![];
        for _ in 0..pairs {
            code.push(self.below(ops) as u8);
            code.push(self.below(pairs) as u8);
        }
        code
    }
}

/// The whole state a run leaves: what `way` (`jit::plain`, the portal or
/// `jit::specialize`) returns, and the machine it ran on, printed whole (its
/// operand stack, frames, counters). Random-program tests compare this, not
/// only the result: code after a return can be wrong where the result is
/// right.
pub fn whole<M: std::fmt::Debug, R>(mut machine: M, way: impl FnOnce(&mut M) -> R) -> (R, String) {
    let r = way(&mut machine);
    (r, format!("{machine:?}"))
}

/// Whether this is the deep tier (`JITGEN_DEEP=1`): every random-program
/// test runs its full count (`how_many`), and the fixed inputs that cost most
/// in a debug build (`jit::specialize` on the largest recursions) are run at
/// their full size.
pub fn deep() -> bool {
    std::env::var_os("JITGEN_DEEP").is_some_and(|v| v != "0")
}

/// How many random programs of a kind to run: `JITGEN_RANDOM_PROGRAMS` if
/// set; else `deep` in the deep tier, and a tenth of it (at least 5) in the
/// fast tier that `cargo test --workspace` runs.
pub fn how_many(deep: usize) -> usize {
    match std::env::var("JITGEN_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()) {
        Some(n) => n,
        None if self::deep() => deep,
        None => (deep / 10).max(5),
    }
}

/// One lock per example interpreter that several modules of this binary
/// configure: a test changing `jit::config()` of TLR, or reading its
/// `jit::stats()`, holds it.
pub static TLR: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Takes `lock`, also after another test failed holding it.
pub fn lock(lock: &'static std::sync::Mutex<()>) -> std::sync::MutexGuard<'static, ()> {
    lock.lock().unwrap_or_else(|e| e.into_inner())
}

/// The full name of the test `test` of the module whose file called this
/// (`tests/it/stackvm.rs` calling with `child_x` gives `stackvm::child_x`).
#[track_caller]
pub fn test_path(test: &str) -> String {
    let file = std::panic::Location::caller().file();
    let module = std::path::Path::new(file).file_stem().and_then(|s| s.to_str()).expect("a test module's file");
    format!("{module}::{test}")
}

/// Asserts that `listings` compiled a loop, and that no loop calls, loads
/// or stores: the interpreter's state lives in registers.
#[allow(dead_code)]
pub fn assert_loops_in_registers(listings: &[String]) {
    let loops: Vec<String> = listings.iter().flat_map(|l| cyclic_blocks(l)).collect();
    assert!(!loops.is_empty(), "no loop compiled: {listings:?}");
    for body in &loops {
        assert!(!body.contains("call") && !body.contains("load") && !body.contains("store"), "{body}");
    }
}

/// Runs the ignored test `test` of the calling module in a child process
/// (the JIT's settings and counters are per process), with
/// `JITGEN_THRESHOLD` set to `threshold`, or unset; whether it passed.
#[track_caller]
pub fn run_child(test: &str, threshold: Option<&str>) -> bool {
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([&test_path(test), "--exact", "--ignored", "--nocapture"]);
    match threshold {
        Some(t) => cmd.env("JITGEN_THRESHOLD", t),
        None => cmd.env_remove("JITGEN_THRESHOLD"),
    };
    cmd.status().expect("the child test runs").success()
}
