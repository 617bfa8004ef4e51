//! What a portal costs when every compilation declines: `cargo run
//! --release --example portal_cost [-- N] [--runs R]`.
//!
//! The interpreter below boxes a value at every turn of its loop, which
//! residual code cannot do yet: each compilation it tries declines, at run
//! time, and the portal goes on interpreting. Times in one run: plain
//! (`jit::plain`), the portal with compilation off (`set_enabled(false)`,
//! as `JITGEN_OFF=1`), and the portal declining. Prints medians and the
//! ratios to plain.

#[path = "common/timing.rs"]
mod timing;

use std::time::{Duration, Instant};

use timing::{median, size_and_runs};

use jitgen::prelude::*;

#[jit_interpreter]
mod boxes {
    use super::*;

    /// Ops: 0 box the counter and add it, 1 count down, 2 loop while the
    /// counter is positive, 3 return the sum.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut acc = 0i64;
        let mut i = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => {
                    let b = Box::new(i);
                    acc = acc.wrapping_add(*b);
                }
                1 => i -= 1,
                2 => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc,
            }
        }
    }
}

fn main() {
    let (n, runs) = size_and_runs(10_000_000);
    // Hidden from the optimizer: it would specialize the plain interpreter
    // to a program it can see.
    let code: Vec<u8> = std::hint::black_box(vec![0u8, 1, 2, 3]);
    let want = boxes::jit::plain::run(&code, n);
    let cfg = boxes::jit::config();
    // The three ways in turn within each run, so that the machine's drift
    // falls on all of them alike.
    let (mut plain, mut off, mut declining) = (vec![], vec![], vec![]);
    for _ in 0..runs {
        for (way, out) in [(0, &mut plain), (1, &mut off), (2, &mut declining)] {
            cfg.set_enabled(way != 1);
            let t = Instant::now();
            let r = if way == 0 { boxes::jit::plain::run(&code, n) } else { boxes::run(&code, n) };
            out.push(t.elapsed());
            assert_eq!(r, want);
        }
    }
    let (plain, off, declining) = (median(plain), median(off), median(declining));
    let s = boxes::jit::stats();
    let ratio = |d: Duration| d.as_secs_f64() / plain.as_secs_f64();
    println!("a loop of {n} turns whose compilations decline, median of {runs} runs");
    println!("plain                     {plain:>10.2?}");
    println!("JIT off                   {off:>10.2?}  {:.3}x plain", ratio(off));
    println!("every compilation declines {declining:>9.2?}  {:.3}x plain", ratio(declining));
    println!(
        "compilations {}, declined {}, entries {}: {:?}",
        s.compilations,
        s.declined,
        s.entries,
        boxes::jit::last_decline()
    );
    assert!(s.declined > 0 && s.entries == 0, "{s:?}");
}
