//! A stack VM whose values add, subtract and negate through the module's
//! own operator impls (`impl Add for Value` with `type Output =
//! Result<Value, String>`, `impl Neg`, `impl Not`, and `impl Mul` for a
//! struct), as a new user writes
//! one: `self.stack.push((a + b)?)`. Before, the analysis typed `a + b` as
//! the operands' type, so the `?` after it was "the pattern `Ok` on a value
//! of type `Value`", and the whole module was interpreted. Now the operator
//! is a call of the impl's method, and random programs agree with
//! `jit::plain` on the result and the whole machine, through the portal
//! and `jit::specialize`.

#[jitgen::jit_interpreter]
pub mod ops {
    use jitgen::prelude::*;
    use std::ops::{Add, Mul, Neg, Not, Sub};

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Value {
        Int(i64),
        Bool(bool),
    }

    impl Add for Value {
        type Output = Result<Value, String>;
        fn add(self, other: Value) -> Result<Value, String> {
            match (self, other) {
                (Value::Int(a), Value::Int(b)) => Ok(Value::Int(a.wrapping_add(b))),
                _ => Err("can only add numbers".to_string()),
            }
        }
    }

    impl Sub for Value {
        type Output = Result<Value, String>;
        fn sub(self, other: Value) -> Result<Value, String> {
            match (self, other) {
                (Value::Int(a), Value::Int(b)) => {
                    a.checked_sub(b).map(Value::Int).ok_or_else(|| "overflow".to_string())
                }
                _ => Err("can only subtract numbers".to_string()),
            }
        }
    }

    impl Neg for Value {
        type Output = Value;
        fn neg(self) -> Value {
            match self {
                Value::Int(a) => Value::Int(a.wrapping_neg()),
                Value::Bool(b) => Value::Bool(b),
            }
        }
    }

    impl Not for Value {
        type Output = Value;
        fn not(self) -> Value {
            match self {
                Value::Int(a) => Value::Bool(a == 0),
                Value::Bool(b) => Value::Bool(!b),
            }
        }
    }

    /// A struct of the module with an operator impl of its own.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Scaled(pub i64);

    impl Mul for Scaled {
        type Output = Scaled;
        fn mul(self, other: Scaled) -> Scaled {
            Scaled(self.0.wrapping_mul(other.0) >> 1)
        }
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Op {
        Push(i64),
        Add,
        Sub,
        Neg,
        Not,
        Mul,
        Load(usize),
        Store(usize),
        JumpIfFalse(usize),
        Jump(usize),
        Halt,
    }

    #[derive(Clone, Debug, PartialEq)]
    pub struct Vm {
        pub stack: Vec<Value>,
        pub locals: Vec<Value>,
        pub fuel: u64,
    }

    impl Vm {
        pub fn new(fuel: u64) -> Vm {
            Vm { stack: Vec::new(), locals: vec![Value::Int(0); 4], fuel }
        }

        fn pop(&mut self) -> Result<Value, String> {
            self.stack.pop().ok_or_else(|| "stack underflow".to_string())
        }

        pub fn run(&mut self, code: &[Op]) -> Result<Value, String> {
            let mut pc = 0;
            loop {
                hint!(global_merge_point);
                if self.fuel == 0 {
                    return Err("out of fuel".to_string());
                }
                self.fuel -= 1;
                let op = hint!(code[pc], concrete);
                pc += 1;
                match op {
                    Op::Push(v) => self.stack.push(Value::Int(v)),
                    Op::Add => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push((a + b)?);
                    }
                    Op::Sub => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push((a - b)?);
                    }
                    Op::Neg => {
                        let a = self.pop()?;
                        self.stack.push(-a);
                    }
                    Op::Not => {
                        let a = self.pop()?;
                        self.stack.push(!a);
                    }
                    Op::Mul => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        let (Value::Int(a), Value::Int(b)) = (a, b) else {
                            return Err("can only multiply numbers".to_string());
                        };
                        let Scaled(p) = Scaled(a) * Scaled(b);
                        self.stack.push(Value::Int(p));
                    }
                    Op::Load(i) => self.stack.push(self.locals[i]),
                    Op::Store(i) => {
                        let v = self.pop()?;
                        self.locals[i] = v;
                    }
                    Op::JumpIfFalse(t) => {
                        if self.pop()? == Value::Bool(false) {
                            pc = t;
                        }
                    }
                    Op::Jump(t) => pc = t,
                    Op::Halt => return self.pop(),
                }
            }
        }
    }
}

use ops::Op::{self, *};
use ops::Vm;

/// Runs `code` interpreted, through the portal and through
/// `jit::specialize`: the same result and the same whole machine.
fn check(code: &[Op], fuel: u64) -> Result<ops::Value, String> {
    let mut want_vm = Vm::new(fuel);
    let want = ops::jit::plain::Vm::run(&mut want_vm, code);
    for specialize in [false, true] {
        let mut vm = Vm::new(fuel);
        let got = if specialize { ops::jit::specialize::Vm::run(&mut vm, code) } else { vm.run(code) };
        assert_eq!(got, want, "{code:?}, specialize {specialize}");
        assert_eq!(vm, want_vm, "{code:?}, specialize {specialize}");
    }
    want
}

/// `i = n; s = 0; while !(i == 0) { s = s + i; i = i - 1 }; s`, the test
/// `i == 0` written `Not` of the number.
fn sum_program(n: i64) -> Vec<Op> {
    vec![
        Push(n),
        Store(0),
        Push(0),
        Store(1),
        Load(0),
        Not,
        Not,
        JumpIfFalse(17),
        Load(1),
        Load(0),
        Add,
        Store(1),
        Load(0),
        Push(1),
        Sub,
        Store(0),
        Jump(4),
        Load(1),
        Halt,
    ]
}

#[test]
fn operators_of_the_modules_own_types_compile_and_agree_with_plain() {
    assert_eq!(check(&sum_program(100), u64::MAX), Ok(ops::Value::Int(5050)));
    // `Scaled(6) * Scaled(7)` is the impl's `Scaled(42 >> 1)`.
    assert_eq!(check(&[Push(6), Push(7), Mul, Halt], 10), Ok(ops::Value::Int(21)));
    ops::jit::config().set_threshold(5);
    let before = ops::jit::stats();
    for _ in 0..3 {
        assert_eq!(Vm::new(u64::MAX).run(&sum_program(1000)), Ok(ops::Value::Int(500_500)));
    }
    let after = ops::jit::stats();
    assert!(after.entries > before.entries && after.declined == before.declined, "{after:?}");
    // The operators are calls the analysis follows, not Rust left to run.
    let left = ops::jit::left_to_rust();
    assert!(left.iter().all(|l| !l.starts_with("Vm::run")), "{left:?}");
    let mut rng = crate::common::Rng(0x0be7_a70f);
    let mut outcomes = [0usize; 2];
    let entries = ops::jit::stats().entries;
    for threshold in [0, 3] {
        ops::jit::config().set_threshold(threshold);
        for _ in 0..crate::common::how_many(300) {
            let len = 3 + rng.below(20) as usize;
            let mut c = vec![Push(4), Push(i64::MIN + 1), Push(7)];
            while c.len() < len {
                let to = rng.below(len as u64 + 1) as usize;
                c.push(match rng.below(11) {
                    10 => Mul,
                    0 => Push(rng.below(7) as i64 - 2),
                    1 => Add,
                    2 => Sub,
                    3 => Neg,
                    4 => Not,
                    5 => Load(rng.below(4) as usize),
                    6 => Store(rng.below(4) as usize),
                    7 => JumpIfFalse(to),
                    8 => Jump(to),
                    _ => Halt,
                });
            }
            c.push(Halt);
            outcomes[usize::from(check(&c, 500).is_err())] += 1;
        }
    }
    // Values and errors both come back, and the programs ran compiled.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
    assert!(ops::jit::stats().entries > entries);
}
