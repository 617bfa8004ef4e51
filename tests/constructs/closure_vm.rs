//! A stack VM as a new user writes one, with hints only added: instructions
//! an enum whose variants hold their operands, frames `Vec<StackFrame {
//! stack_offset, ip }>` under a type alias, the arithmetic through helper
//! methods taking a closure (`impl Fn(i64, i64) -> i64`, and a type
//! parameter bounded by `Fn` in a `where` clause, and a function pointer
//! `fn(i64, i64) -> Option<i64>` given `i64::checked_add` or an associated
//! function `Self::checked_mul` by its path), and through free functions taking the stack and
//! a function pointer or a closure (`F: Fn`), errors as
//! `Box<dyn Error>` (`return Err(Box::new(e))`, `?` on the helpers'
//! `Result<_, VmError>`), the position a local `ip` promoted by the
//! statement `hint!(ip, promote);` at `Ret`. Before, the module did not
//! compile: rustc reported `impl Trait` in a binding's type and a
//! mismatched `Box` inside the expansion, and the analysis reported the
//! `concrete` read of `ip` as unsatisfiable, the promote statement having
//! promoted nothing. Random programs agree with `jit::plain` on the whole
//! final state, through the portal and `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod cvm {
    use jitgen::prelude::*;
    use std::fmt;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Instr {
        Push { value: i64 },
        Get { slot: usize },
        Set { slot: usize },
        Add,
        Sub,
        Mul,
        Less,
        AddChecked,
        MulChecked,
        SubChecked,
        Average,
        Max,
        Jump { to: usize },
        JumpIfZero { to: usize },
        Call { to: usize, args: usize },
        Ret,
        Halt,
    }

    #[derive(Debug)]
    pub enum VmError {
        Underflow(usize),
        BadSlot(usize),
        NoFrame,
        OutOfFuel,
        Overflow(usize),
    }

    impl fmt::Display for VmError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                VmError::Underflow(at) => write!(f, "stack underflow at {at}"),
                VmError::BadSlot(slot) => write!(f, "bad slot {slot}"),
                VmError::NoFrame => write!(f, "return outside a call"),
                VmError::OutOfFuel => write!(f, "out of fuel"),
                VmError::Overflow(at) => write!(f, "overflow at {at}"),
            }
        }
    }

    impl std::error::Error for VmError {}

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct StackFrame {
        pub stack_offset: usize,
        pub ip: usize,
    }

    type CallStack = Vec<StackFrame>;

    #[derive(Debug, Clone, PartialEq)]
    pub struct Vm {
        pub stack: Vec<i64>,
        pub calls: CallStack,
        pub fuel: u64,
    }

    fn average(a: i64, b: i64) -> i64 {
        a.wrapping_add(b) / 2
    }

    fn apply_checked(stack: &mut Vec<i64>, ip: usize, f: fn(i64, i64) -> Option<i64>) -> Result<(), VmError> {
        let b = stack.pop().ok_or(VmError::Underflow(ip))?;
        let a = stack.pop().ok_or(VmError::Underflow(ip))?;
        stack.push(f(a, b).ok_or(VmError::Overflow(ip))?);
        Ok(())
    }

    fn combine<F: Fn(i64, i64) -> i64>(stack: &mut Vec<i64>, ip: usize, f: F) -> Result<(), VmError> {
        let b = stack.pop().ok_or(VmError::Underflow(ip))?;
        let a = stack.pop().ok_or(VmError::Underflow(ip))?;
        stack.push(f(a, b));
        Ok(())
    }

    impl Vm {
        fn checked_mul(a: i64, b: i64) -> Option<i64> {
            a.checked_mul(b)
        }

        pub fn new(fuel: u64) -> Vm {
            Vm { stack: Vec::new(), calls: CallStack::new(), fuel }
        }

        fn pop(&mut self, ip: usize) -> Result<i64, VmError> {
            self.stack.pop().ok_or(VmError::Underflow(ip))
        }

        fn binary(&mut self, ip: usize, f: impl Fn(i64, i64) -> i64) -> Result<(), VmError> {
            let b = self.pop(ip)?;
            let a = self.pop(ip)?;
            self.stack.push(f(a, b));
            Ok(())
        }

        fn checked(&mut self, ip: usize, f: fn(i64, i64) -> Option<i64>) -> Result<(), VmError> {
            let b = self.pop(ip)?;
            let a = self.pop(ip)?;
            self.stack.push(f(a, b).ok_or(VmError::Overflow(ip))?);
            Ok(())
        }

        fn compare<F>(&mut self, ip: usize, f: F) -> Result<(), VmError>
        where
            F: Fn(i64, i64) -> bool,
        {
            let b = self.pop(ip)?;
            let a = self.pop(ip)?;
            self.stack.push(f(a, b) as i64);
            Ok(())
        }

        pub fn run(&mut self, code: &[Instr]) -> Result<i64, Box<dyn std::error::Error>> {
            let mut ip = 0usize;
            loop {
                hint!(global_merge_point);
                if self.fuel == 0 {
                    return Err(VmError::OutOfFuel.into());
                }
                self.fuel -= 1;
                let offset = self.calls.last().map_or(0, |f| f.stack_offset);
                let instr = hint!(code[ip], concrete);
                ip += 1;
                match instr {
                    Instr::Push { value } => self.stack.push(value),
                    Instr::Get { slot } => {
                        let v = *self.stack.get(offset + slot).ok_or(VmError::BadSlot(slot))?;
                        self.stack.push(v);
                    }
                    Instr::Set { slot } => {
                        let v = self.pop(ip)?;
                        if offset + slot >= self.stack.len() {
                            return Err(Box::new(VmError::BadSlot(slot)));
                        }
                        self.stack[offset + slot] = v;
                    }
                    Instr::Add => self.binary(ip, |a, b| a.wrapping_add(b))?,
                    Instr::Sub => self.binary(ip, |a, b| a.wrapping_sub(b))?,
                    Instr::Mul => self.binary(ip, |a, b| a.wrapping_mul(b))?,
                    Instr::Less => self.compare(ip, |a, b| a < b)?,
                    Instr::AddChecked => self.checked(ip, i64::checked_add)?,
                    Instr::MulChecked => self.checked(ip, Self::checked_mul)?,
                    Instr::Average => self.binary(ip, average)?,
                    Instr::SubChecked => apply_checked(&mut self.stack, ip, i64::checked_sub)?,
                    Instr::Max => combine(&mut self.stack, ip, |a, b| if a > b { a } else { b })?,
                    Instr::Jump { to } => ip = to,
                    Instr::JumpIfZero { to } => {
                        if self.pop(ip)? == 0 {
                            ip = to;
                        }
                    }
                    Instr::Call { to, args } => {
                        let stack_offset = self.stack.len().checked_sub(args).ok_or(VmError::Underflow(ip))?;
                        self.calls.push(StackFrame { stack_offset, ip });
                        ip = to;
                    }
                    Instr::Ret => {
                        let result = self.pop(ip)?;
                        let frame = self.calls.pop().ok_or(VmError::NoFrame)?;
                        self.stack.truncate(frame.stack_offset);
                        self.stack.push(result);
                        ip = frame.ip;
                        hint!(ip, promote);
                    }
                    Instr::Halt => return Ok(self.pop(ip)?),
                }
            }
        }
    }
}

use cvm::Instr::{self, *};
use cvm::Vm;

/// `fib(n)`, recursive.
fn fib_program(n: i64) -> Vec<Instr> {
    vec![
        Push { value: n },
        Call { to: 3, args: 1 },
        Halt,
        Get { slot: 0 },
        Push { value: 2 },
        Less,
        JumpIfZero { to: 9 },
        Get { slot: 0 },
        Ret,
        Get { slot: 0 },
        Push { value: 1 },
        SubChecked,
        Call { to: 3, args: 1 },
        Get { slot: 0 },
        Push { value: 2 },
        Sub,
        Call { to: 3, args: 1 },
        AddChecked,
        Ret,
    ]
}

/// Runs `code` interpreted, through the portal and through
/// `jit::specialize`: the same result (errors by their text, or a panic
/// too) and the same whole machine.
fn check(code: &[Instr], fuel: u64) -> Option<Result<i64, String>> {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let mut want_vm = Vm::new(fuel);
    let want =
        catch_unwind(AssertUnwindSafe(|| cvm::jit::plain::Vm::run(&mut want_vm, code).map_err(|e| e.to_string())));
    for specialize in [false, true] {
        let mut vm = Vm::new(fuel);
        let got = catch_unwind(AssertUnwindSafe(|| {
            if specialize { cvm::jit::specialize::Vm::run(&mut vm, code) } else { vm.run(code) }
                .map_err(|e| e.to_string())
        }));
        match (&want, &got) {
            (Ok(w), Ok(g)) => assert_eq!(g, w, "{code:?}, specialize {specialize}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{code:?}, specialize {specialize}: one panicked, the other did not"),
        }
        assert_eq!(vm, want_vm, "{code:?}, specialize {specialize}");
    }
    want.ok()
}

#[test]
fn closure_helpers_and_a_promote_statement_compile_and_agree_with_plain() {
    let fib = fib_program(15);
    assert_eq!(check(&fib, u64::MAX), Some(Ok(610)));
    cvm::jit::config().set_threshold(50);
    let before = cvm::jit::stats();
    for _ in 0..3 {
        assert_eq!(Vm::new(u64::MAX).run(&fib).map_err(|e| e.to_string()), Ok(610));
    }
    let after = cvm::jit::stats();
    assert!(after.entries > before.entries && after.flexswitch_cases > before.flexswitch_cases, "{after:?}");
    assert!(after.declined == before.declined, "{after:?}");
    // Only the error's `into` runs as Rust; the closures, and the
    // functions handed over by their paths, are inlined.
    let left = cvm::jit::left_to_rust();
    assert!(left.iter().all(|l| !l.starts_with("Vm::run") || l.contains("the method `into`")), "{left:?}");
    // A machine and its program built afresh for each run, every buffer
    // kept so that each is at an address of its own: the program's
    // canonical copy keys the code, so once the first runs have compiled
    // the tree, later runs compile nothing and enter the code (at
    // threshold 0, a visit of the hook at a position without code would
    // compile one).
    let mut programs: Vec<Vec<Instr>> = vec![];
    let mut counts = vec![];
    cvm::jit::config().set_threshold(0);
    for _ in 0..24 {
        programs.push(fib_program(14));
        let code = programs.last().expect("a program");
        let mut want_vm = Vm::new(u64::MAX);
        let want = cvm::jit::plain::Vm::run(&mut want_vm, code).map_err(|e| e.to_string());
        let mut vm = Vm::new(u64::MAX);
        assert_eq!(vm.run(code).map_err(|e| e.to_string()), want);
        assert_eq!(vm, want_vm);
        let s = cvm::jit::stats();
        counts.push((s.compilations + s.flexswitch_cases, s.entries));
    }
    assert!(programs.windows(2).all(|w| w[0].as_ptr() != w[1].as_ptr()));
    assert!(counts[0].0 > after.compilations + after.flexswitch_cases, "{counts:?}");
    assert_eq!(counts[4].0, counts[23].0, "later runs compiled again: {counts:?}");
    assert!(counts[23].1 > counts[4].1, "{counts:?}");
    let mut rng = crate::common::Rng(0xc105_5eed);
    for threshold in [0, 3] {
        cvm::jit::config().set_threshold(threshold);
        for _ in 0..crate::common::how_many(300) {
            let len = 4 + rng.below(30) as usize;
            let mut c = vec![Push { value: 3 }, Push { value: 5 }, Push { value: 7 }];
            while c.len() < len {
                let to = rng.below(len as u64 + 3) as usize;
                c.push(match rng.below(18) {
                    0 => Push { value: rng.below(9) as i64 - 2 },
                    12 => Push { value: i64::MAX - rng.below(3) as i64 },
                    13 => AddChecked,
                    14 => MulChecked,
                    15 => Average,
                    16 => SubChecked,
                    17 => Max,
                    1 => Get { slot: rng.below(4) as usize },
                    2 => Set { slot: rng.below(4) as usize },
                    3 => Add,
                    4 => Sub,
                    5 => Mul,
                    6 => Less,
                    7 => Jump { to },
                    8 => JumpIfZero { to },
                    9 => Call { to, args: rng.below(3) as usize },
                    10 => Ret,
                    _ => Halt,
                });
            }
            c.push(Halt);
            check(&c, 1_000);
        }
    }
}
