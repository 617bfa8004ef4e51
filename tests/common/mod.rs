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
}

/// The whole state a run leaves: what `way` (`jit::plain`, the portal or
/// `jit::specialize`) returns, and the machine it ran on, printed whole (its
/// operand stack, frames, counters). Random-program tests compare this, not
/// only the result: code after a return can be wrong where the result is
/// right.
pub fn whole<M: std::fmt::Debug, R>(mut machine: M, way: fn(&mut M) -> R) -> (R, String) {
    let r = way(&mut machine);
    (r, format!("{machine:?}"))
}

/// How many random programs of each kind to run: `JITGEN_RANDOM_PROGRAMS`,
/// else `default`.
pub fn how_many(default: usize) -> usize {
    std::env::var("JITGEN_RANDOM_PROGRAMS").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
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

/// Runs the ignored test `test` of this test binary in a child process
/// (the JIT's settings and counters are per process), with
/// `JITGEN_THRESHOLD` set to `threshold`, or unset; whether it passed.
pub fn run_child(test: &str, threshold: Option<&str>) -> bool {
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([test, "--exact", "--ignored", "--nocapture"]);
    match threshold {
        Some(t) => cmd.env("JITGEN_THRESHOLD", t),
        None => cmd.env_remove("JITGEN_THRESHOLD"),
    };
    cmd.status().expect("the child test runs").success()
}
