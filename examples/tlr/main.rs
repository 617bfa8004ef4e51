//! TLR, the tiny register machine of shared/languages/tlr.md.
//!
//! `cargo run --example tlr [N]` runs the square program on N (default 10) and
//! prints the colored flow graph of the interpreter.

mod interp;

use interp::tlr;

/// The square program of tlr.md: a*a by repeated addition.
pub const SQUARE: &[u8] = &[7, 3, 1, 0, 1, 1, 4, 0, 1, 2, 4, 1, 8, 5, 0, 1, 0, 2, 2, 5, 1, 1, 2, 2, 0, 3, 10, 2, 2, 6];

fn main() {
    let n: i64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10);
    let r = tlr::jit::plain::interpret(SQUARE, n);
    println!("square({n}) = {r:?}");
    let graphs = tlr::jit::graphs();
    let f = graphs.function("interpret").expect("analysed");
    println!("position key at the merge point: {:?}", f.position_key().unwrap_or_default());
    println!("{}", f.to_text());
}
