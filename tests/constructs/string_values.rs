//! A dynamic VM as a new user writes one: its `Value` enum owns `String`s,
//! its instructions carry `Value`s, and values are cloned out of its
//! operand stack (`Dup`, `Over`, `Pick`) and moved back into it. Residual
//! code reads such an element in place; where Rust's code cloned it, the
//! value residual code holds must be a copy of its own. Before, it named the
//! element's own string: pushing it took that string out of the stack (the
//! element left empty), and an element dropped while the value lived left
//! it naming freed memory. Whole final states (result, stack, output) are
//! compared with `jit::plain`, through the portal and `jit::specialize`, on
//! fixed and random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod dynamic {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Nil,
        Int(i64),
        Bool(bool),
        Str(String),
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Op {
        Const(Value),
        /// Copies the top.
        Dup,
        /// Copies the value under the top.
        Over,
        /// Copies the value at this depth below the top.
        Pick(usize),
        Swap,
        Drop,
        /// Ints add, strings join.
        Add,
        Lt,
        Jmp(usize),
        JmpIfFalse(usize),
        Print,
        Halt,
    }

    #[derive(Debug)]
    pub struct Vm {
        pub code: Vec<Op>,
        pub pc: usize,
        pub stack: Vec<Value>,
        pub out: Vec<String>,
    }

    impl Vm {
        pub fn new(code: Vec<Op>) -> Vm {
            Vm { code, pc: 0, stack: Vec::new(), out: Vec::new() }
        }

        fn pop(&mut self) -> Result<Value, String> {
            self.stack.pop().ok_or_else(|| format!("stack underflow at {}", self.pc))
        }

        fn peek(&self, depth: usize) -> Result<Value, String> {
            if depth >= self.stack.len() {
                return Err(format!("no value {depth} deep at {}", self.pc));
            }
            Ok(self.stack[self.stack.len() - 1 - depth].clone())
        }

        pub fn run(&mut self, mut fuel: u32) -> Result<Value, String> {
            loop {
                hint!(global_merge_point);
                if fuel == 0 {
                    return Err("out of fuel".to_string());
                }
                fuel -= 1;
                let pc = hint!(self.pc, promote);
                if pc >= self.code.len() {
                    return Ok(Value::Nil);
                }
                let op = self.code[pc].clone();
                self.pc += 1;
                match op {
                    Op::Const(v) => self.stack.push(v),
                    Op::Dup => {
                        let v = self.peek(0)?;
                        self.stack.push(v);
                    }
                    Op::Over => {
                        let v = self.peek(1)?;
                        self.stack.push(v);
                    }
                    Op::Pick(d) => {
                        let v = self.peek(d)?;
                        self.stack.push(v);
                    }
                    Op::Swap => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(b);
                        self.stack.push(a);
                    }
                    Op::Drop => {
                        self.pop()?;
                    }
                    Op::Add => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        let r = match (a, b) {
                            (Value::Int(x), Value::Int(y)) => Value::Int(x.wrapping_add(y)),
                            (Value::Str(x), Value::Str(y)) => Value::Str(x + &y),
                            (a, b) => return Err(format!("cannot add {a:?} and {b:?}")),
                        };
                        self.stack.push(r);
                    }
                    Op::Lt => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        match (a, b) {
                            (Value::Int(x), Value::Int(y)) => self.stack.push(Value::Bool(x < y)),
                            _ => return Err("cannot compare".to_string()),
                        }
                    }
                    Op::Jmp(t) => self.pc = t,
                    Op::JmpIfFalse(t) => {
                        if let Value::Bool(false) | Value::Nil = self.pop()? {
                            self.pc = t;
                        }
                    }
                    Op::Print => {
                        let s = match self.pop()? {
                            Value::Nil => "nil".to_string(),
                            Value::Int(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            Value::Str(s) => s,
                        };
                        self.out.push(s);
                    }
                    Op::Halt => return self.pop(),
                }
            }
        }
    }
}

use dynamic::{jit, Op, Op::*, Value, Vm};

fn text(s: &str) -> Op {
    Const(Value::Str(s.into()))
}

fn check(code: &[Op], fuel: u32) {
    let state = |vm: Vm, r: Result<Value, String>| (r, vm.pc, vm.stack, vm.out);
    let mut vm = Vm::new(code.to_vec());
    let want = jit::plain::Vm::run(&mut vm, fuel);
    let want = state(vm, want);
    let mut vm = Vm::new(code.to_vec());
    let got = vm.run(fuel);
    assert_eq!(state(vm, got), want, "{code:?}");
    let mut vm = Vm::new(code.to_vec());
    let got = jit::specialize::Vm::run(&mut vm, fuel);
    assert_eq!(state(vm, got), want, "{code:?}");
}

/// Counts `n` down (the counter under a string), copying the string out of
/// the stack at each turn with `copy` and joining it to itself.
fn doubling(n: i64, copy: Op) -> Vec<Op> {
    vec![
        text("ab"),
        Const(Value::Int(n)),
        // 2: while 0 < counter
        Const(Value::Int(0)),
        Over,
        Lt,
        JmpIfFalse(14),
        // the string, copied; the copy joined to the original's copy
        copy,
        Pick(2),
        Add,
        Print,
        Const(Value::Int(-1)),
        Add,
        Jmp(2),
        Halt,
        // 14
        Drop,
        Dup,
        Print,
        Halt,
    ]
}

#[test]
fn values_owning_strings_copied_out_of_the_stack_agree_with_plain() {
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    for n in [0, 1, 3, 40] {
        check(&doubling(n, Pick(1)), 10_000);
        check(&doubling(n, Over), 10_000);
    }
    // A copy outliving its element: `Swap` drops nothing, `Drop` does.
    check(&[text("left"), text("right"), Dup, Swap, Drop, Add, Dup, Print, Halt], 100);
    check(&[text("x"), Dup, Dup, Add, Add, Dup, Pick(1), Drop, Print, Print, Halt], 100);
    assert!(jit::stats().entries > 0, "{:?}", jit::last_decline());
    // Its loops call Rust at each turn: the code left at its turn checks
    // (and the interpreter went on from there).
    assert!(jit::stats().turn_checks > 0, "{:?}", jit::stats());
}

#[test]
fn random_programs_over_values_owning_strings_agree_with_plain() {
    let mut rng = crate::common::Rng(0x57_12_e5);
    for i in 0..crate::common::how_many(300) {
        jit::config().set_threshold([0, 1, 2, 5][i % 4]);
        jit::config().set_turn_checks(1);
        let len = 1 + rng.below(14) as usize;
        let code: Vec<Op> = (0..len)
            .map(|_| match rng.below(14) {
                0 => text(rng.pick(&["", "a", "bc", "a longer string than twenty-four bytes"])),
                1 => Const(Value::Int(rng.below(5) as i64 - 2)),
                2 => Const(if rng.below(2) == 0 { Value::Nil } else { Value::Bool(rng.below(2) == 0) }),
                3 => Dup,
                4 => Over,
                5 => Pick(rng.below(4) as usize),
                6 => Swap,
                7 => Drop,
                8 => Add,
                9 => Lt,
                10 => Jmp(rng.below(len as u64) as usize),
                11 => JmpIfFalse(rng.below(len as u64 + 1) as usize),
                12 => Print,
                _ => Halt,
            })
            .collect();
        check(&code, 1 + rng.below(200) as u32);
    }
}
