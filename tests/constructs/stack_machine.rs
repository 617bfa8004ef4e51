//! A stack machine as a new user writes it, in three ways jitgen used to
//! refuse or serve badly:
//! - its counter is a field, read into a local before the `concrete` hint
//!   (`let pc = m.pc; hint!(code[pc], concrete)`): the read is promoted
//!   where it is made, as `hint!(m.pc, promote)` would;
//! - a portal returns a tuple holding a tuple and the stack, a `Vec`;
//! - a portal returns a struct holding the stack and a `Result` with a
//!   `String`, which residual code builds by a call of Rust's own code;
//! - an operand read by a helper that moves the position on is the index
//!   of a `String` cloned or measured: computed once, as Rust does;
//! - its stack is longer than a virtual list can be: every such length
//!   shares one key, so a stack that grows from call to call (or from turn
//!   to turn) finds the code compiled for it.
//!
//! Results and whole final states are compared with `jit::plain`, through
//! the portal and `jit::specialize`, on fixed and random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod machine {
    use jitgen::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Op {
        Push(i64),
        Add,
        Sub,
        Dup,
        Drop,
        /// Back to the target while fewer turns than the limit were taken.
        Again(usize),
        Halt,
    }

    /// The machine's registers.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Machine {
        pub pc: usize,
        pub turns: u32,
        pub limit: u32,
    }

    /// The operations on the stack alone (`Again` and `Halt` are the
    /// portals'); a value missing from the stack reads as 0.
    fn stack_op(op: Op, stack: &mut Vec<i64>) {
        match op {
            Op::Push(v) => stack.push(v),
            Op::Add | Op::Sub => {
                let b = stack.pop().unwrap_or(0);
                let a = stack.pop().unwrap_or(0);
                stack.push(match op {
                    Op::Add => a.wrapping_add(b),
                    _ => a.wrapping_sub(b),
                });
            }
            Op::Dup => {
                let a = stack.last().copied().unwrap_or(0);
                stack.push(a);
            }
            Op::Drop => {
                stack.pop();
            }
            Op::Again(_) | Op::Halt => {}
        }
    }

    /// Runs from `m.pc`, which it reads into a local at each turn.
    pub fn run_machine(code: &[Op], m: &mut Machine, n: i64) -> i64 {
        let mut stack: Vec<i64> = vec![n];
        loop {
            hint!(global_merge_point);
            let pc = m.pc;
            if pc >= code.len() {
                return stack.last().copied().unwrap_or(0);
            }
            let op = hint!(code[pc], concrete);
            m.pc = pc + 1;
            match op {
                Op::Again(t) => {
                    if m.turns < m.limit {
                        m.turns += 1;
                        m.pc = t;
                    }
                }
                Op::Halt => return -(stack.len() as i64),
                other => stack_op(other, &mut stack),
            }
        }
    }

    /// How a run of `run_outcome` ended.
    #[derive(Debug, PartialEq)]
    pub struct Outcome {
        pub stack: Vec<i64>,
        pub result: Result<i64, String>,
    }

    /// Runs on `stack`: `Sub` on fewer than two values and `Halt` end the
    /// run with an error.
    pub fn run_outcome(code: &[Op], mut stack: Vec<i64>, limit: u32) -> Outcome {
        let mut pc = 0usize;
        let mut turns = 0u32;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                let top = stack.last().copied().unwrap_or(0);
                return Outcome { stack, result: Ok(top) };
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                Op::Sub => {
                    let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                        return Outcome { stack, result: Err(format!("underflow at {pc}")) };
                    };
                    stack.push(a.wrapping_sub(b));
                }
                Op::Again(t) => {
                    if turns < limit {
                        turns += 1;
                        pc = t;
                    }
                }
                Op::Halt => return Outcome { stack, result: Err("halted".to_string()) },
                other => stack_op(other, &mut stack),
            }
        }
    }

    /// The operand at `*pc` (0 past the end), naming one of three names;
    /// moves `*pc` on.
    fn operand(code: &[u8], pc: &mut usize) -> usize {
        let b = code.get(*pc).copied().unwrap_or(0) as usize % 3;
        *pc += 1;
        b
    }

    /// Byte 0 clones the name its operand gives, 1 measures it in place, 2
    /// pushes a number, 3 measures the text of a number it pops; gives
    /// back where it stopped and the lengths.
    pub fn run_names(code: &[u8], names: &[String]) -> (usize, Vec<usize>) {
        let mut pc = 0usize;
        let mut lens: Vec<usize> = Vec::new();
        let mut nums: Vec<i64> = vec![-7];
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                return (pc, lens);
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => {
                    let s = names[operand(code, &mut pc)].clone();
                    lens.push(s.len());
                }
                1 => lens.push(names[operand(code, &mut pc)].len()),
                2 => nums.push(pc as i64 * 37 - 100),
                3 => {
                    if !nums.is_empty() {
                        let t = nums.pop().unwrap().to_string();
                        lens.push(t.len());
                    }
                }
                _ => {}
            }
        }
    }

    /// Runs on `stack`; gives back (turns, pc) and the stack.
    pub fn run_pair(code: &[Op], mut stack: Vec<i64>, limit: u32) -> ((u32, usize), Vec<i64>) {
        let mut pc = 0usize;
        let mut turns = 0u32;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                return ((turns, pc), stack);
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                Op::Again(t) => {
                    if turns < limit {
                        turns += 1;
                        pc = t;
                    }
                }
                Op::Halt => return ((turns, usize::MAX), stack),
                other => stack_op(other, &mut stack),
            }
        }
    }
}

use machine::Op::{self, *};

/// A random program: a body of stack operations and `Again`s to earlier
/// positions (the limit ends them), sometimes a `Halt`.
fn random_program(rng: &mut crate::common::Rng) -> Vec<Op> {
    let len = 1 + rng.below(10) as usize;
    (0..len)
        .map(|i| match rng.below(8) {
            0 => Push(rng.below(7) as i64 - 3),
            1 => Add,
            2 => Sub,
            3 => Dup,
            4 => Drop,
            5 | 6 => Again(rng.below(i as u64 + 1) as usize),
            _ if rng.below(3) == 0 => Halt,
            _ => Push(1),
        })
        .collect()
}

#[test]
fn a_stack_machine_written_plainly_agrees_with_plain() {
    assert!(machine::jit::left_to_rust().is_empty(), "{:?}", machine::jit::left_to_rust());
    machine::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x57_ac_4);
    let fixed: Vec<Vec<Op>> = vec![
        vec![Dup, Again(0)],
        vec![Push(1), Sub, Dup, Again(0), Halt],
        vec![Push(2), Add, Push(3), Sub, Again(1)],
        vec![Drop, Drop, Add, Again(0)],
        vec![],
    ];
    let random: Vec<Vec<Op>> = (0..crate::common::how_many(150)).map(|_| random_program(&mut rng)).collect();
    for code in fixed.iter().chain(&random) {
        for (n, limit) in [(5, 0), (-2, 7), (100, 60)] {
            let start = || machine::Machine { pc: 0, turns: 0, limit };
            let mut want = start();
            let r = machine::jit::plain::run_machine(code, &mut want, n);
            let mut got = start();
            assert_eq!((machine::run_machine(code, &mut got, n), &got), (r, &want), "{code:?} {n} {limit}");
            let mut got = start();
            assert_eq!((machine::jit::specialize::run_machine(code).call(&mut got, n), &got), (r, &want), "{code:?}");

            let stack: Vec<i64> = (0..n.rem_euclid(90)).collect();
            let want = machine::jit::plain::run_pair(code, stack.clone(), limit);
            assert_eq!(machine::run_pair(code, stack.clone(), limit), want, "{code:?} {n} {limit}");
            assert_eq!(
                machine::jit::specialize::run_pair(code).call(&mut stack.clone(), limit),
                want,
                "{code:?} {n} {limit}"
            );

            let want = machine::jit::plain::run_outcome(code, stack.clone(), limit);
            assert_eq!(machine::run_outcome(code, stack.clone(), limit), want, "{code:?} {n} {limit}");
            let got = machine::jit::specialize::run_outcome(code).call(&mut stack.clone(), limit);
            assert_eq!(got, want, "{code:?} {n} {limit}");
        }
    }
    let s = machine::jit::stats();
    assert!(s.entries > 0 && s.flexswitches > 0 && s.declined == 0, "{s:?} {:?}", machine::jit::last_decline());
    // The counter was promoted: the program's position is known in code.
    let listing = machine::jit::specialize::run_machine(&fixed[1]).listing().to_string();
    assert!(listing.contains("flexswitch"), "{listing}");

    let names: Vec<String> = ["a", "bb", "cccc"].iter().map(|s| s.to_string()).collect();
    let random: Vec<Vec<u8>> =
        (0..crate::common::how_many(100)).map(|_| (0..rng.below(12)).map(|_| rng.below(5) as u8).collect()).collect();
    let fixed = [vec![0, 2, 1, 1, 0], vec![1, 0, 0, 2, 0], vec![2, 2, 2, 3, 3, 3, 3]];
    for code in fixed.iter().chain(&random) {
        let want = machine::jit::plain::run_names(code, &names);
        assert_eq!(machine::run_names(code, &names), want, "{code:?}");
        assert_eq!(machine::jit::specialize::run_names(code).call(&names), want, "{code:?}");
    }

    // Stacks too long to be virtual share a key: a run on a longer stack
    // than the last enters the same code, compiling nothing.
    let code = [Dup, Again(0)];
    let long = |len: i64| (0..len).collect::<Vec<i64>>();
    assert_eq!(machine::run_pair(&code, long(100), 3), machine::jit::plain::run_pair(&code, long(100), 3));
    let before = machine::jit::stats();
    for len in [150, 230, 400] {
        assert_eq!(machine::run_pair(&code, long(len), 3), machine::jit::plain::run_pair(&code, long(len), 3));
    }
    let after = machine::jit::stats();
    assert_eq!(after.compilations, before.compilations, "{after:?}");
    assert!(after.entries >= before.entries + 3, "{after:?}");
}
