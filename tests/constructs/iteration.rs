//! `for` over a `Vec`'s elements, as Rust programmers write it (`&v`,
//! `.iter()`, `.iter().copied()`, `.iter().enumerate()`, `.iter_mut()`),
//! compiled as a loop over indices; compared with `jit::plain` through the
//! portal and `jit::specialize`, and on random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod sums {
    use jitgen::prelude::*;

    /// Ops: 0 adds every weight, 1 adds every weight times its index, 2
    /// adds the weights above the counter, 3 adds 1 to every weight, 4
    /// counts down, 5 loops while positive, else returns the sum.
    pub fn run(code: &[u8], weights: &[i64], n: i64) -> i64 {
        let mut ws: Vec<i64> = weights.to_vec();
        let mut acc = 0i64;
        let mut i = n;
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => {
                    for w in &ws {
                        acc = acc.wrapping_add(*w);
                    }
                }
                1 => {
                    for (k, w) in ws.iter().enumerate() {
                        acc = acc.wrapping_add(w.wrapping_mul(k as i64));
                    }
                }
                2 => {
                    for w in ws.iter().copied() {
                        if w <= i {
                            continue;
                        }
                        acc = acc.wrapping_add(w);
                    }
                }
                3 => {
                    for w in ws.iter_mut() {
                        *w += 1;
                    }
                }
                4 => i -= 1,
                5 => {
                    if i > 0 {
                        pc = 0;
                    }
                }
                _ => return acc,
            }
        }
    }
}

fn check(code: &[u8], weights: &[i64], n: i64) {
    let want = sums::jit::plain::run(code, weights, n);
    assert_eq!(sums::run(code, weights, n), want, "{code:?} {weights:?} {n}");
    assert_eq!(sums::jit::specialize::run(code).call(weights, n), want, "{code:?} {weights:?} {n}");
}

#[test]
fn loops_over_elements_compile_and_agree_with_plain() {
    sums::jit::config().set_threshold(0);
    for n in [0i64, 1, 4, 50] {
        check(&[0, 1, 2, 3, 4, 5, 9], &[3, 1, 4, 1, 5], n);
        check(&[0, 2, 4, 5, 9], &[], n);
    }
    assert!(sums::jit::stats().compilations > 0);
    assert!(sums::jit::left_to_rust().is_empty(), "{:?}", sums::jit::left_to_rust());
}

#[test]
fn random_programs_looping_over_elements_agree_with_plain() {
    sums::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x17e2_a7e5);
    for _ in 0..crate::common::how_many(300) {
        let mut code: Vec<u8> = (0..rng.below(6)).map(|_| rng.below(4) as u8).collect();
        code.extend([4, 5, 9]);
        let weights: Vec<i64> = (0..rng.below(6)).map(|_| rng.below(20) as i64 - 5).collect();
        check(&code, &weights, rng.below(30) as i64);
    }
}
