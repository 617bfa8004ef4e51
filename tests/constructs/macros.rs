//! `macro_rules!` macros in an interpreter: one of the module (a binary
//! operation on the stack) and one defined in the portal (fetching an
//! operand, with the `concrete` hint inside it), and `matches!`. The
//! analysis sees their expansions, so the portal compiles; results are
//! compared with `jit::plain`, through the portal and `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod stack {
    use jitgen::prelude::*;

    macro_rules! binary {
        ($stack:ident, $op:ident) => {{
            let b = $stack.pop().unwrap_or(0);
            let a = $stack.pop().unwrap_or(0);
            $stack.push(a.$op(b));
        }};
    }

    /// Ops: 0 add, 1 sub, 2 mul, 3 k: push k, 4 dup, 5 t: jump to t while
    /// the top is positive, else return the top.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut stack: Vec<i64> = vec![n];
        let mut pc = 0;
        macro_rules! fetch {
            () => {{
                let op = hint!(code[pc], concrete);
                pc += 1;
                op
            }};
        }
        loop {
            hint!(global_merge_point);
            let op = fetch!();
            match op {
                0 => binary!(stack, wrapping_add),
                1 => binary!(stack, wrapping_sub),
                2 => binary!(stack, wrapping_mul),
                3 => {
                    let v = fetch!() as i64;
                    stack.push(v);
                }
                4 => {
                    let v = stack.last().copied().unwrap_or(0);
                    stack.push(v);
                }
                5 => {
                    let target = fetch!() as usize;
                    if matches!(stack.last(), Some(x) if *x > 0) {
                        pc = target;
                    }
                }
                _ => return stack.pop().unwrap_or(0),
            }
        }
    }
}

fn check(code: &[u8], n: i64) {
    let want = stack::jit::plain::run(code, n);
    assert_eq!(stack::run(code, n), want, "{code:?} {n}");
    assert_eq!(stack::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

#[test]
fn a_portal_using_macros_compiles_and_agrees_with_plain() {
    stack::jit::config().set_threshold(0);
    // n, n-1, ..., 0: a loop, then the sum of the stack's top two.
    let countdown = [4u8, 3, 1, 1, 5, 0, 3, 7, 0, 9];
    for n in [0i64, 1, 5, 100] {
        check(&countdown, n);
    }
    assert!(stack::jit::stats().compilations > 0, "{:?}", stack::jit::left_to_rust());
    assert!(stack::jit::left_to_rust().is_empty(), "{:?}", stack::jit::left_to_rust());
}

#[test]
fn random_programs_using_macros_agree_with_plain() {
    stack::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x3ac_0501);
    for _ in 0..crate::common::how_many(500) {
        let mut code = vec![];
        for _ in 0..rng.below(10) {
            match rng.below(5) {
                3 => code.extend([3, rng.below(9) as u8]),
                op => code.push(op as u8),
            }
        }
        code.push(9);
        check(&code, rng.below(50) as i64 - 10);
    }
}
