//! The user-facing contract of DESIGN.md section 1 on the seeds' plus_minus:
//! `#[jit_interpreter]`, `hint!`, `jit::graphs()`, `jit::plain`,
//! `jit::specialize`, the portal, `jit::stats()` and `jit::config()`, and
//! the environment switches.

#[allow(dead_code)]
#[path = "../../examples/plus_minus.rs"]
mod example;

use example::plus_minus;
use jitgen::prelude::*;

fn reference(s: &[u8], x: i64, y: i64) -> i64 {
    s.iter().fold(x, |acc, op| match op {
        b'+' => acc + y,
        b'-' => acc - y,
        _ => acc,
    })
}

#[test]
fn annotated_module_still_interprets() {
    for (prog, x, y) in [(&b"+-+"[..], 10, 3), (b"", 5, 1), (b"--x-", 0, 2)] {
        assert_eq!(plus_minus::jit::plain::ll_plus_minus(prog, x, y), reference(prog, x, y));
    }
}

#[test]
fn graphs_give_colors_text_and_dot() {
    let g = plus_minus::jit::graphs();
    let f = g.function("ll_plus_minus").unwrap();
    assert_eq!(f.color_of("acc"), Some(Color::Red));
    assert_eq!(f.color_of("op"), Some(Color::Green));
    assert_eq!(f.color_of("nonexistent"), None);
    let text = f.to_text();
    assert!(text.starts_with("fn ll_plus_minus -> i64\n"), "{text}");
    assert!(text.contains("R acc_"), "{text}");
    assert!(f.to_dot().starts_with("digraph {"));
}

#[test]
fn specialize_plus_minus_plus_is_add_sub_add() {
    let r = plus_minus::jit::specialize::ll_plus_minus(b"+-+");
    // One residual operation per line after the entry label; `_checked`
    // where the build has overflow checks (the interpreter would panic there).
    let ops: Vec<String> = r
        .listing()
        .lines()
        .filter_map(|l| l.split(" = ").nth(1))
        .map(|rhs| rhs.split(['.', ' ']).next().unwrap().trim_end_matches("_checked").to_string())
        .collect();
    assert_eq!(ops, ["add", "sub", "add"], "{}", r.listing());
    let samples = [0i64, 1, -1, 3, 10, -77, 1 << 40, 123_456_789, -987_654];
    for x in samples {
        for y in samples {
            assert_eq!(r.call(x, y), plus_minus::jit::plain::ll_plus_minus(b"+-+", x, y));
        }
    }
    assert_eq!(r.call(10, 3), 13);
}

#[test]
#[ignore = "run by portal_alone in a child process: stats count every thread's compilations"]
fn child_portal_compiles_once_hot_and_agrees_with_plain() {
    plus_minus::jit::config().set_threshold(3);
    let before = plus_minus::jit::stats();
    let programs: [&[u8]; 4] = [b"+-+", b"++++--+-+-++", b"-", b"+x+y-"];
    for p in programs {
        for x in -5..20 {
            assert_eq!(plus_minus::ll_plus_minus(p, x, 7), plus_minus::jit::plain::ll_plus_minus(p, x, 7));
        }
    }
    let after = plus_minus::jit::stats();
    // One compilation per program (its first position, once hot: each
    // position is counted by itself); every later call runs residual code.
    let n = after.compilations - before.compilations;
    assert_eq!(n, programs.len() as u64, "{after:?}");
    assert!(after.entries - before.entries >= 4 * 20, "{after:?}");
    assert_eq!(after.declined, before.declined);
}

/// Runs one test of this binary in a child process with an environment.
#[track_caller]
fn run_child(test: &str, env: &[(&str, &str)]) -> bool {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([&crate::common::test_path(test), "--exact", "--ignored", "--nocapture"]).env("JITGEN_CHILD", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.status().unwrap().success()
}

#[test]
#[ignore = "run by environment_switches in a child process"]
fn child_interprets_only() {
    assert_eq!(std::env::var("JITGEN_CHILD").as_deref(), Ok("1"));
    for x in 0..50 {
        assert_eq!(plus_minus::ll_plus_minus(b"+-+", x, 1), x + 1);
    }
    assert_eq!(plus_minus::jit::stats().compilations, 0);
    assert!(!plus_minus::jit::config().enabled());
}

#[test]
#[ignore = "run by environment_switches in a child process"]
fn child_compiles_at_first_sight() {
    assert_eq!(plus_minus::jit::config().threshold(), 0);
    assert_eq!(plus_minus::ll_plus_minus(b"++", 1, 1), 3);
    assert_eq!(plus_minus::jit::stats().compilations, 1);
    assert_eq!(plus_minus::jit::stats().entries, 1);
}

#[test]
#[ignore = "run by default_policy in a child process"]
fn child_default_policy_compiles_after_the_warm_up() {
    use jitgen_runtime::driver::{DEFAULT_THRESHOLD, EXPECTED_COMPILE, WARMUP_FACTOR};
    let policy = plus_minus::jit::config().hot_policy();
    assert_eq!(policy, jitgen::HotPolicy { threshold: DEFAULT_THRESHOLD, warmup: true });
    // Calls until the first compilation: each visits each position of the
    // program once. Past the threshold a position is only warm; it compiles
    // once the run has lasted the warm-up (no compilation measured yet: the
    // expected compile time is the default).
    let start = std::time::Instant::now();
    let mut calls = 0i64;
    while plus_minus::jit::stats().compilations == 0 {
        assert_eq!(plus_minus::ll_plus_minus(b"+-+", calls, 1), calls + 1);
        calls += 1;
        assert!(start.elapsed() < std::time::Duration::from_secs(60), "never compiled");
    }
    let took = start.elapsed();
    assert!(took >= EXPECTED_COMPILE * WARMUP_FACTOR, "compiled after {took:?} ({calls} calls)");
    assert!(calls > 100, "{calls}");
    // Its machine code was compiled on the compiler's thread.
    let s = plus_minus::jit::stats();
    assert!(s.background_compile_nanos > 0 && s.background_compile_nanos < s.compile_nanos, "{s:?}");
    // From then on, calls run residual code.
    let entries = plus_minus::jit::stats().entries;
    for x in 0..10 {
        assert_eq!(plus_minus::ll_plus_minus(b"+-+", x, 1), x + 1);
    }
    assert!(plus_minus::jit::stats().entries >= entries + 10);
}

#[test]
fn default_policy() {
    assert!(run_child("child_default_policy_compiles_after_the_warm_up", &[]));
}

#[test]
fn portal_alone() {
    assert!(run_child("child_portal_compiles_once_hot_and_agrees_with_plain", &[]));
}

#[test]
fn environment_switches() {
    assert!(run_child("child_interprets_only", &[("JITGEN_OFF", "1")]));
    assert!(run_child("child_compiles_at_first_sight", &[("JITGEN_THRESHOLD", "0")]));
}

/// The README's output block of `cargo run --example plus_minus`
/// is what the example prints: its first line, its timing lines up to their
/// figures (which vary), and all the rest (the specialized listing, the
/// position key, the colored flow graph) exactly.
#[test]
fn the_readme_shows_what_plus_minus_prints() {
    let readme = include_str!("../../README.md");
    let at = readme.find("`cargo run --example plus_minus` prints:").expect("the README shows the output");
    let block = readme[at..].split("```").nth(1).expect("an output block");
    let block = block.strip_prefix("text\n").expect("a text block");
    let lines: Vec<&str> = block.lines().collect();
    let program = example::program();
    let sum =
        (0..example::CALLS).fold(0i64, |s, x| s.wrapping_add(plus_minus::jit::plain::ll_plus_minus(&program, x, 3)));
    let first = format!("sum of {} runs of a {}-operation program: {sum}", example::CALLS, program.len());
    assert_eq!(lines[0], first);
    assert!(lines[1].starts_with("interpreted: "), "{}", lines[1]);
    assert!(lines[2].starts_with("with the JIT: ") && lines[2].ends_with(" ms compiling)"), "{}", lines[2]);
    let rest: String = lines[3..].iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(rest.trim_end(), example::report().trim_end());
}
