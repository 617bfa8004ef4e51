//! Portals whose loop runs in a closure outlined from the hook and is
//! entered again at its merge point after each visit of the hook
//! (`jitgen-macros/src/outline.rs`): a `Result` portal with `?`s, `return`s
//! in a local and a module `macro_rules!`, and a local the loop borrows
//! where another was computed from it; a portal returning a digest of its locals whose
//! `while` condition counts its tests (and whose helper `fn`, constant,
//! type and `use` are written in its body); an `Option` portal with `?`s. Each gives back its whole final
//! state (a digest of its locals, or of its whole stack) with its turns
//! counted in it, so a turn run twice or skipped at a re-entry shows.
//! Results are compared with `jit::plain`, through the portal and
//! `jit::specialize`, at small thresholds (the loop is entered again after
//! each visit the hook counts) and under the default policy.

use jitgen::prelude::*;

#[jit_interpreter]
mod res {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Error {
        Underflow,
        Halted,
    }

    macro_rules! pop_or_give_up {
        ($stack:ident, $turns:ident) => {
            match $stack.pop() {
                Some(v) => v,
                None => return Ok(-1000 - $turns),
            }
        };
    }

    /// Ops: 0 add, 1 sub, 2 k: push k, 3 dup, 4 t: jump to t while the
    /// top is positive, 5 fail, 6 end: a digest of the whole stack and
    /// the turns (an empty stack at `pop`: the turns).
    pub fn run(code: &[u8], n: i64) -> Result<i64, Error> {
        let mut stack: Vec<i64> = vec![n];
        let first: i64 = stack[0];
        let mut pc = 0;
        let mut turns: i64 = 0;
        macro_rules! fail {
            () => {
                return Err(if turns > 3 { Error::Halted } else { Error::Underflow })
            };
        }
        loop {
            hint!(global_merge_point);
            turns += 1;
            if turns > 20_000 {
                return Err(Error::Halted);
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => {
                    let b = pop_or_give_up!(stack, turns);
                    let a = pop_or_give_up!(stack, turns);
                    stack.push(a.wrapping_add(b));
                }
                1 => {
                    let b = pop_or_give_up!(stack, turns);
                    let a = pop_or_give_up!(stack, turns);
                    stack.push(a.wrapping_sub(b));
                }
                2 => {
                    let k = hint!(code[pc], concrete);
                    pc += 1;
                    stack.push(k as i64);
                }
                3 => {
                    let v = stack.last().copied().ok_or(Error::Underflow)?;
                    stack.push(v);
                }
                4 => {
                    let t = hint!(code[pc], concrete);
                    pc += 1;
                    if stack.last().copied().ok_or(Error::Underflow)? > 0 {
                        pc = t as usize;
                    }
                }
                5 => fail!(),
                _ => {
                    let mut digest = turns * 1000 + first % 7;
                    let mut i = 0;
                    while i < stack.len() {
                        digest = digest.wrapping_mul(1_000_003).wrapping_add(stack[i]);
                        i += 1;
                    }
                    return Ok(digest);
                }
            }
        }
    }
}

#[jit_interpreter]
mod counted_while {
    use jitgen::prelude::*;

    fn more(tests: &mut i64, pc: usize, len: usize) -> bool {
        *tests += 1;
        pc < len
    }

    /// Ops: 0 decrement, 1 back to the start while positive, 2 stop,
    /// other k: add k. The result: a digest of the accumulator, the
    /// condition's tests, and where the program stopped.
    pub fn run(code: &[u8], n: i64) -> i64 {
        // A helper, a constant, a type with a method and a `use` written
        // inside the portal, as Rust allows: moved to the module before the
        // analysis (`jitgen-macros/src/nested.rs`).
        use std::cmp::min;
        const LIMIT: i64 = 20_000;
        struct Start {
            modulus: i64,
        }
        impl Start {
            fn of(&self, n: i64) -> i64 {
                n % self.modulus
            }
        }
        fn start(n: i64) -> i64 {
            Start { modulus: 50 }.of(n)
        }
        let mut acc = start(n);
        let mut pc = 0;
        let mut tests: i64 = 0;
        while more(&mut tests, pc, code.len()) {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                acc -= 1;
            } else if op == 1 {
                if acc > 0 && tests < min(LIMIT, 20_000 + acc) {
                    pc = 0;
                    continue;
                }
            } else if op == 2 {
                return acc.wrapping_mul(100_000).wrapping_add(tests).wrapping_mul(1_000).wrapping_add(pc as i64);
            } else {
                acc += op as i64;
            }
        }
        acc.wrapping_mul(100_000).wrapping_add(tests + 7).wrapping_mul(1_000).wrapping_add(pc as i64)
    }
}

#[jit_interpreter]
mod opt {
    use jitgen::prelude::*;

    /// Ops: 0 k: push k, 1 pop two and push their difference, 2 t: jump
    /// to t while the top is positive, 3 end: a digest of the whole stack
    /// and the turns. `None` on an underflow.
    pub fn run(code: &[u8], n: i64) -> Option<i64> {
        let mut stack: Vec<i64> = vec![n];
        let mut pc = 0;
        let mut turns: i64 = 0;
        loop {
            hint!(global_merge_point);
            turns += 1;
            if turns > 20_000 {
                return None;
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                let k = hint!(code[pc], concrete);
                pc += 1;
                stack.push(k as i64);
            } else if op == 1 {
                let b = stack.pop()?;
                let a = stack.pop()?;
                stack.push(a - b);
            } else if op == 2 {
                let t = hint!(code[pc], concrete);
                pc += 1;
                if *stack.last()? > 0 {
                    pc = t as usize;
                }
            } else {
                break;
            }
        }
        let mut digest = turns;
        let mut i = 0;
        while i < stack.len() {
            digest = digest.wrapping_mul(1_000_003).wrapping_add(stack[i]);
            i += 1;
        }
        Some(digest)
    }
}

fn check_res(code: &[u8], n: i64) {
    let want = res::jit::plain::run(code, n);
    assert_eq!(res::run(code, n), want, "{code:?} {n}");
    assert_eq!(res::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

fn check_while(code: &[u8], n: i64) {
    let want = counted_while::jit::plain::run(code, n);
    assert_eq!(counted_while::run(code, n), want, "{code:?} {n}");
    assert_eq!(counted_while::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

fn check_opt(code: &[u8], n: i64) {
    let want = opt::jit::plain::run(code, n);
    assert_eq!(opt::run(code, n), want, "{code:?} {n}");
    assert_eq!(opt::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

#[test]
fn loops_entered_again_after_the_hook_agree_with_plain() {
    // Thresholds above 0: the hook counts the first visits and the loop
    // is entered again after each.
    for threshold in [Some(0), Some(1), Some(2), Some(3), Some(7), None] {
        if let Some(t) = threshold {
            res::jit::config().set_threshold(t);
            counted_while::jit::config().set_threshold(t);
            opt::jit::config().set_threshold(t);
        }
        // n, n-1, .., 1: a loop, then the sum of the last two.
        let countdown = [3u8, 2, 1, 1, 4, 0, 0, 6];
        for n in [0i64, 1, 5, 3000] {
            check_res(&countdown, n);
            check_res(&[0, 6], n);
            check_res(&[1, 1, 6], n);
            check_res(&[3, 3, 5], n);
            check_res(&[3, 3, 3, 3, 3, 5], n);
        }
        for n in [0i64, 3, 49, 250] {
            check_while(&[0, 1], n);
            check_while(&[0, 5, 0, 0, 0, 1, 2], n);
            check_while(&[9, 9, 0], n);
        }
        for n in [0i64, 2, 4000] {
            check_opt(&[0, 1, 1, 2, 0, 3], n);
            check_opt(&[1, 1, 3], n);
        }
    }
    res::jit::config().set_threshold(0);
    assert!(res::jit::stats().entries > 0, "{:?}", res::jit::stats());
    assert!(counted_while::jit::stats().entries > 0, "{:?}", counted_while::jit::stats());
    assert!(counted_while::jit::left_to_rust().is_empty(), "{:?}", counted_while::jit::left_to_rust());
    assert!(opt::jit::stats().entries > 0, "{:?}", opt::jit::stats());
}

#[test]
fn random_programs_of_loops_entered_again_agree_with_plain() {
    let mut rng = crate::common::Rng(0x0e_e17e);
    for i in 0..crate::common::how_many(300) {
        let t = [0, 1, 2, 5][i % 4];
        res::jit::config().set_threshold(t);
        counted_while::jit::config().set_threshold(t);
        opt::jit::config().set_threshold(t);
        let len = 1 + rng.below(9) as usize;
        let mut code = vec![];
        while code.len() < len {
            match rng.below(7) {
                2 => code.extend([2, rng.below(9) as u8]),
                4 => code.extend([4, rng.below(len as u64) as u8]),
                op => code.push(op as u8),
            }
        }
        code.extend([6, 6, 6]);
        check_res(&code, rng.below(40) as i64 - 5);
        let code: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.below(6) as u8).collect();
        check_while(&code, rng.below(100) as i64);
        let mut code = vec![];
        while code.len() < len {
            match rng.below(3) {
                0 => code.extend([0, rng.below(9) as u8]),
                1 => code.push(1),
                _ => code.extend([2, rng.below(len as u64) as u8]),
            }
        }
        code.extend([3, 3, 3]);
        check_opt(&code, rng.below(40) as i64);
    }
}
