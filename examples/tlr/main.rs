//! TLR, the tiny register machine of shared/languages/tlr.md.
//!
//! `cargo run --example tlr [N]` runs the square program on N (default 10) and
//! prints the colored flow graph of the interpreter.

use tlr_interp::tlr;

/// The square program of tlr.md: a*a by repeated addition.
pub const SQUARE: &[u8] = &[7, 3, 1, 0, 1, 1, 4, 0, 1, 2, 4, 1, 8, 5, 0, 1, 0, 2, 2, 5, 1, 1, 2, 2, 0, 3, 10, 2, 2, 6];

fn main() {
    let n: i64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3_000_000);
    let listing = std::env::args().any(|a| a == "--listing");

    let t = std::time::Instant::now();
    let plain = tlr::jit::plain::interpret(SQUARE, n);
    let interpreted = t.elapsed();

    let t = std::time::Instant::now();
    let jitted = tlr::interpret(SQUARE, n);
    let compiled = t.elapsed();
    assert_eq!(plain, jitted, "the JIT must agree with the interpreter");

    let s = tlr::jit::stats();
    println!("square({n}) = {jitted:?}");
    println!("interpreted: {interpreted:?}");
    println!(
        "with the JIT: {compiled:?} ({:.1}x; {} compilation(s), {:.2} ms compiling, {} residual operations)",
        interpreted.as_secs_f64() / compiled.as_secs_f64(),
        s.compilations,
        s.compile_nanos as f64 / 1e6,
        s.residual_ops
    );
    // The same with the registers in a `#[virtualizable]` frame the caller
    // owns: in registers inside compiled code, in memory afterwards.
    let mut frame = tlr::Frame { a: n, ..Default::default() };
    let t = std::time::Instant::now();
    let framed = tlr::run(&mut frame, SQUARE);
    println!(
        "with the JIT, registers in a frame: {:?}; the frame after: a = {}, {} steps",
        t.elapsed(),
        frame.a,
        frame.steps
    );
    assert_eq!(framed, plain);
    if listing {
        for l in tlr::jit::portal_listings() {
            println!("{l}");
        }
    }
}
