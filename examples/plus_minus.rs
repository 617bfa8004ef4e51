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

fn main() {
    let program = b"+-++-+";
    let r = plus_minus::jit::plain::ll_plus_minus(program, 10, 3);
    println!("ll_plus_minus({:?}, 10, 3) = {r}", std::str::from_utf8(program).unwrap());
    let graphs = plus_minus::jit::graphs();
    let f = graphs.function("ll_plus_minus").expect("analysed");
    println!("position key at the merge point: {:?}", f.position_key().unwrap_or_default());
    println!("{}", f.to_text());
}
