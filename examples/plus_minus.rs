//! The seeds' `ll_plus_minus`: the smallest interpreter, a string of `+` and `-`.
//!
//! `cargo run --example plus_minus` runs it and prints its colored flow graph:
//! `s`, `pc` and `op` are green (the program is known at compile time), `acc`
//! is red, and only the two updates of `acc` are left for residual code.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod plus_minus {
    use super::*;

    /// Applies each `+` (add y) and `-` (subtract y) of `s` to `x`.
    pub fn ll_plus_minus(s: &[u8], x: i64, y: i64) -> i64 {
        let mut acc = x;
        let mut pc = 0;
        while pc < s.len() {
            hint!(global_merge_point);
            let op = hint!(s[pc], concrete);
            if op == b'+' {
                acc += y;
            } else if op == b'-' {
                acc -= y;
            }
            pc += 1;
        }
        acc
    }
}

/// How many times the example runs its program, each time on another `x`.
pub const CALLS: i64 = 20_000;

/// The example's program: 400 operations, every third a `-`.
pub fn program() -> Vec<u8> {
    (0..400).map(|i| if i % 3 == 1 { b'-' } else { b'+' }).collect()
}

fn main() {
    let program = program();
    let calls = CALLS;
    plus_minus::jit::config().set_threshold(100);

    let t = std::time::Instant::now();
    let mut plain = 0i64;
    for i in 0..calls {
        plain = plain.wrapping_add(plus_minus::jit::plain::ll_plus_minus(&program, i, 3));
    }
    let interpreted = t.elapsed();

    let t = std::time::Instant::now();
    let mut jitted = 0i64;
    for i in 0..calls {
        jitted = jitted.wrapping_add(plus_minus::ll_plus_minus(&program, i, 3));
    }
    let compiled = t.elapsed();
    assert_eq!(plain, jitted, "the JIT must agree with the interpreter");

    let s = plus_minus::jit::stats();
    println!("sum of {calls} runs of a {}-operation program: {jitted}", program.len());
    println!("interpreted: {interpreted:?}");
    println!(
        "with the JIT: {compiled:?} ({:.1}x; {} compilation(s), {:.2} ms compiling)",
        interpreted.as_secs_f64() / compiled.as_secs_f64(),
        s.compilations,
        s.compile_nanos as f64 / 1e6
    );

    print!("{}", report());
}

/// What the example prints after its timings: the interpreter specialized to
/// `+-+`, the position key and the colored flow graph. The README shows it,
/// and a test (`tests/it/contract.rs`) checks that it is what the README says.
pub fn report() -> String {
    let r = plus_minus::jit::specialize::ll_plus_minus(b"+-+");
    let graphs = plus_minus::jit::graphs();
    let f = graphs.function("ll_plus_minus").expect("analysed");
    format!(
        "\njit::specialize::ll_plus_minus(b\"+-+\"), a function of (x, y):\n{}\nposition key at the merge point: {:?}\n{}\n",
        r.listing(),
        f.position_key().unwrap_or_default(),
        f.to_text()
    )
}
