//! What a portal costs when every compilation declines: `cargo run
//! --release --example portal_cost [-- N] [--runs R]`.
//!
//! The interpreter below boxes a value at every turn of its loop, which
//! residual code cannot do yet: each compilation it tries declines, at run
//! time, and the portal goes on interpreting. Times in one run: plain
//! (`jit::plain`), the portal with compilation off (`set_enabled(false)`,
//! as `JITGEN_OFF=1`), and the portal declining, which soon goes on
//! without its hook (`jit::stats().unhooked`). Prints medians and the
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
    // to a program it can see. Both functions are called through pointers
    // it cannot see either, so that neither is inlined into this loop and
    // laid out differently from the other.
    let code: Vec<u8> = std::hint::black_box(vec![0u8, 1, 2, 3]);
    let plain_run: fn(&[u8], i64) -> i64 = std::hint::black_box(boxes::jit::plain::run);
    let portal_run: fn(&[u8], i64) -> i64 = std::hint::black_box(boxes::run);
    let want = plain_run(&code, n);
    let cfg = boxes::jit::config();
    // The three ways in turn within each round, so that the machine's drift
    // falls on all of them alike; ratios are taken within a round.
    let (mut plain, mut off, mut declining) = (vec![], vec![], vec![]);
    let (mut off_ratio, mut declining_ratio) = (vec![], vec![]);
    for _ in 0..runs {
        let mut round = [Duration::ZERO; 3];
        for (way, t_way) in round.iter_mut().enumerate() {
            cfg.set_enabled(way != 1);
            let t = Instant::now();
            let r = if way == 0 { plain_run(&code, n) } else { portal_run(&code, n) };
            *t_way = t.elapsed();
            assert_eq!(r, want);
        }
        plain.push(round[0]);
        off.push(round[1]);
        declining.push(round[2]);
        off_ratio.push(round[1].as_secs_f64() / round[0].as_secs_f64());
        declining_ratio.push(round[2].as_secs_f64() / round[0].as_secs_f64());
    }
    let (plain, off, declining) = (median(plain), median(off), median(declining));
    let s = boxes::jit::stats();
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "a loop of {n} turns whose compilations decline, median of {runs} rounds (ratios: median of each round's)"
    );
    println!("plain                      {plain:>10.2?}");
    println!("JIT off                    {off:>10.2?}  {:.3}x plain", med(off_ratio));
    println!("every compilation declines {declining:>10.2?}  {:.3}x plain", med(declining_ratio));
    println!(
        "compilations {}, declined {}, entries {}, calls that gave up the hook {}: {:?}",
        s.compilations,
        s.declined,
        s.entries,
        s.unhooked,
        boxes::jit::last_decline()
    );
    assert!(s.declined > 0 && s.entries == 0, "{s:?}");
}
