//! Code whose root is inside a call of the interpreted program. A VM that
//! keeps its caller's state in the frames it pushes and only pops them
//! (TLC's way: `Ret` restores the caller's operand stack and promotes its
//! return address) hands over to the interpreter where compiled code
//! returns below the depth at which it was entered. A root that could only
//! run straight to that return, or one that runs the rest of a recursion's
//! call from a point after a call returned, is declined, and the recursion's
//! entry compiles instead; a root at the head of a loop is kept. The
//! machine starts in the middle of a call (its
//! saved frames given), so the first visit, at threshold 0, compiles there.
//! Every run compares the whole final state with `jit::plain`; the tests run
//! in a child process (the threshold and the stats are the module's).

use crate::common;

use jitgen::prelude::*;

#[jit_interpreter]
mod vm {
    use jitgen::prelude::*;

    /// One instruction.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Op {
        /// Push a constant.
        Push(i64),
        /// Push the call's argument.
        Arg,
        /// Pop b, pop a, push a + b (wrapping).
        Add,
        /// Pop b, pop a, push a - b (wrapping).
        Sub,
        /// Pop b, pop a, push 1 if a < b, else 0.
        Lt,
        /// Pop; if it is zero, continue at the index.
        JumpIfZero(usize),
        /// Continue at the index.
        Jump(usize),
        /// Push the top of the stack again.
        Dup,
        /// Pop the callee's argument and call the code at the index.
        Call(usize),
        /// Return the popped value to the caller, or end with it.
        Ret,
    }

    /// A caller's state while its callee runs.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Frame {
        /// Its operand stack.
        pub stack: Vec<i64>,
        /// Its argument.
        pub arg: i64,
        /// Where it goes on.
        pub ret: usize,
    }

    /// The machine: the current call's position, argument and operand
    /// stack, and its saved callers.
    #[derive(Clone, Debug, PartialEq)]
    pub struct Machine {
        pub pc: usize,
        pub arg: i64,
        pub stack: Vec<i64>,
        pub frames: Vec<Frame>,
    }

    impl Machine {
        /// The popped value; 0 from an empty stack.
        fn pop(&mut self) -> i64 {
            self.stack.pop().unwrap_or(0)
        }

        /// Runs to the outermost `Ret`: its value, or a message.
        pub fn run(&mut self, code: &[Op]) -> Result<i64, String> {
            loop {
                hint!(global_merge_point);
                let op = match code.get(hint!(self.pc, concrete)) {
                    Some(op) => *op,
                    None => return Err(format!("no instruction at {}", self.pc)),
                };
                self.pc += 1;
                match op {
                    Op::Push(v) => self.stack.push(v),
                    Op::Arg => self.stack.push(self.arg),
                    Op::Add | Op::Sub | Op::Lt => {
                        let b = self.pop();
                        let a = self.pop();
                        self.stack.push(match op {
                            Op::Add => a.wrapping_add(b),
                            Op::Sub => a.wrapping_sub(b),
                            _ => i64::from(a < b),
                        });
                    }
                    Op::JumpIfZero(t) => {
                        if self.pop() == 0 {
                            self.pc = t;
                        }
                    }
                    Op::Jump(t) => self.pc = t,
                    Op::Dup => {
                        let v = self.pop();
                        self.stack.push(v);
                        self.stack.push(v);
                    }
                    Op::Call(t) => {
                        let a = self.pop();
                        let stack = std::mem::take(&mut self.stack);
                        self.frames.push(Frame { stack, arg: self.arg, ret: self.pc });
                        self.arg = a;
                        self.pc = t;
                    }
                    Op::Ret => {
                        let v = self.pop();
                        match self.frames.pop() {
                            None => return Ok(v),
                            Some(caller) => {
                                self.stack = caller.stack;
                                self.arg = caller.arg;
                                self.stack.push(v);
                                self.pc = hint!(caller.ret, promote);
                            }
                        }
                    }
                }
            }
        }
    }
}

use vm::Op::{self, *};

/// Fibonacci from index 0: `fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)`;
/// index 10 is where a call goes on after its first recursive call returned.
fn fib_code() -> Vec<Op> {
    vec![
        Arg,
        Push(2),
        Lt,
        JumpIfZero(6),
        Arg,
        Ret,
        Arg,
        Push(1),
        Sub,
        Call(0),
        // 10
        Arg,
        Push(2),
        Sub,
        Call(0),
        Add,
        Ret,
        // 16: the outermost caller
        Ret,
    ]
}

/// A machine at `pc` inside a call of `arg` whose stack holds `stack`, its
/// one caller going on at `ret`; run through `way`, with its final state.
fn resumed(
    code: &[Op],
    pc: usize,
    arg: i64,
    stack: Vec<i64>,
    ret: usize,
    way: Run,
) -> (Result<i64, String>, vm::Machine) {
    let mut m = vm::Machine { pc, arg, stack, frames: vec![vm::Frame { stack: vec![], arg: 0, ret }] };
    let r = way(&mut m, code);
    (r, m)
}

type Run = fn(&mut vm::Machine, &[Op]) -> Result<i64, String>;

#[test]
fn code_starting_inside_a_call_is_declined_for_the_recursions_entry() {
    assert!(common::run_child("child_code_starting_inside_a_call", None));
}

#[test]
#[ignore = "run by code_starting_inside_a_call_is_declined_for_the_recursions_entry in a child process"]
fn child_code_starting_inside_a_call() {
    assert!(vm::jit::left_to_rust().is_empty(), "{:?}", vm::jit::left_to_rust());
    vm::jit::config().set_threshold(0);
    // The end of a call: add, return to the caller's `Ret`.
    let code = [Add, Ret, Ret];
    let want = resumed(&code, 0, 0, vec![20, 22], 2, vm::jit::plain::Machine::run);
    assert_eq!(want.0, Ok(42));
    assert_eq!(resumed(&code, 0, 0, vec![20, 22], 2, vm::Machine::run), want);
    let s = vm::jit::stats();
    let why = vm::jit::last_decline().unwrap_or_default();
    // (The caller's `Ret`, reached with no frame saved, compiles.)
    assert_eq!(s.declined, 1, "{s:?} {why}");
    assert!(why.contains("straight to a hand-over"), "{why}");

    // Fibonacci's call of n after its first recursive call returned
    // fib(n - 1): fib(n - 2) still to compute, then the sum returned.
    let code = fib_code();
    for (n, fib_n_1) in [(12, 89), (20, 4181)] {
        let want = resumed(&code, 10, n, vec![fib_n_1], 16, vm::jit::plain::Machine::run);
        let fib = (0..n).fold((0i64, 1i64), |(a, b), _| (b, a + b)).0;
        assert_eq!(want.0, Ok(fib), "fib({n})");
        assert_eq!(resumed(&code, 10, n, vec![fib_n_1], 16, vm::Machine::run), want, "fib({n})");
    }
    let s = vm::jit::stats();
    let why = vm::jit::last_decline().unwrap_or_default();
    assert!(why.contains("inside a call of a recursion"), "{s:?} {why}");
    // Declined there, the function's entry compiled and ran the rest.
    assert!(s.declined == 2 && s.compilations > s.declined && s.spills > 0, "{s:?} {why}");
}

/// `f(n) = n == 0 ? 0 : f(n - 1) + 1`, each call counting a loop down from
/// `turns` first; index 3 is the loop's head, the counter on the stack.
fn counting_code(turns: i64) -> Vec<Op> {
    vec![
        Arg,
        JumpIfZero(17),
        Push(turns),
        // 3: the loop
        Push(1),
        Sub,
        Dup,
        JumpIfZero(8),
        Jump(3),
        // 8
        Arg,
        Push(1),
        Sub,
        Call(0),
        Add,
        Push(1),
        Add,
        Ret,
        // 16: the outermost caller
        Ret,
        // 17
        Push(0),
        Ret,
    ]
}

#[test]
fn a_loop_inside_a_recursions_call_compiles_from_its_head() {
    assert!(common::run_child("child_a_loop_inside_a_recursions_call", None));
}

#[test]
#[ignore = "run by a_loop_inside_a_recursions_call_compiles_from_its_head in a child process"]
fn child_a_loop_inside_a_recursions_call() {
    vm::jit::config().set_threshold(0);
    // Inside the call of 6, its loop at 200 turns to go: its head's root
    // loops back to its entry, then recurses (spilled at the function's
    // entry) and returns below its entry.
    let code = counting_code(1000);
    let want = resumed(&code, 3, 6, vec![200], 16, vm::jit::plain::Machine::run);
    assert_eq!(want.0, Ok(6));
    assert_eq!(resumed(&code, 3, 6, vec![200], 16, vm::Machine::run), want);
    let s = vm::jit::stats();
    let why = vm::jit::last_decline().unwrap_or_default();
    assert!(s.declined == 0 && s.spills > 0 && s.entries > 0, "{s:?} {why}");
}
