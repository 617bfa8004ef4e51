//! A VM whose portal returns `Result<i64, Box<dyn std::error::Error>>`, as
//! Rust programmers write errors: `Err("out of fuel".into())`, a module
//! error boxed (`Box::new(VmError::DivZero { .. })`), and `?` converting the
//! module's `VmError` into the box. The machine is `borrowed_code`'s.
//!
//! Before, `dyn std::error::Error` was a type the analysis refused, so the
//! whole module was left to Rust: it interpreted only. Now a `Box<dyn
//! Trait>` is an object compiled code owns without looking inside (in its
//! arena, as a `String`), made by the Rust it outlines (the conversions),
//! and given back by the portal: whole final states, errors as their text
//! and type, agree with `jit::plain` through the portal and
//! `jit::specialize`, on fixed and random programs.

use jitgen::prelude::*;

use crate::borrowed_code::{assemble, random_program, sum_to, Ins};

#[jit_interpreter]
mod machine {
    use jitgen::prelude::*;
    use std::convert::TryFrom;
    use std::fmt;

    #[derive(Debug, Clone, Copy, PartialEq)]
    #[repr(u8)]
    pub enum OpCode {
        Push = 0,
        Add = 1,
        Sub = 2,
        Jnz = 3,
        Dup = 4,
        Pop = 5,
        Load = 6,
        Store = 7,
        Halt = 8,
        Mul = 9,
        Div = 10,
    }

    impl TryFrom<u8> for OpCode {
        type Error = VmError;
        fn try_from(b: u8) -> Result<Self, VmError> {
            Ok(match b {
                0 => OpCode::Push,
                1 => OpCode::Add,
                2 => OpCode::Sub,
                3 => OpCode::Jnz,
                4 => OpCode::Dup,
                5 => OpCode::Pop,
                6 => OpCode::Load,
                7 => OpCode::Store,
                8 => OpCode::Halt,
                9 => OpCode::Mul,
                10 => OpCode::Div,
                _ => return Err(VmError::BadOp(b)),
            })
        }
    }

    #[derive(Debug, PartialEq)]
    pub enum VmError {
        StackUnderflow(usize),
        BadOp(u8),
        DivZero { at: usize },
    }

    impl fmt::Display for VmError {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            match self {
                VmError::StackUnderflow(ip) => write!(f, "stack underflow at {ip}"),
                VmError::BadOp(b) => write!(f, "bad opcode {b:#x}"),
                VmError::DivZero { at } => write!(f, "division by zero at {at}"),
            }
        }
    }

    impl std::error::Error for VmError {}

    #[derive(Debug)]
    pub struct Machine<'a> {
        code: &'a [u8],
        pub ip: usize,
        pub stack: Vec<i64>,
        pub locals: [i64; 4],
    }

    impl<'a> Machine<'a> {
        pub fn new(code: &'a [u8]) -> Self {
            Machine { code, ip: 0, stack: Vec::with_capacity(64), locals: [0; 4] }
        }

        fn read_u8(&mut self) -> u8 {
            let b = self.code[self.ip];
            self.ip += 1;
            b
        }

        fn read_i32(&mut self) -> i32 {
            let bytes = [self.code[self.ip], self.code[self.ip + 1], self.code[self.ip + 2], self.code[self.ip + 3]];
            self.ip += 4;
            i32::from_le_bytes(bytes)
        }

        fn pop(&mut self) -> Result<i64, VmError> {
            self.stack.pop().ok_or(VmError::StackUnderflow(self.ip))
        }

        pub fn run(&mut self, mut fuel: u32) -> Result<i64, Box<dyn std::error::Error>> {
            loop {
                hint!(global_merge_point);
                if fuel == 0 {
                    return Err("out of fuel".into());
                }
                fuel -= 1;
                hint!(self.ip, promote);
                let op = OpCode::try_from(self.read_u8())?;
                match op {
                    OpCode::Push => {
                        let v = self.read_i32() as i64;
                        self.stack.push(v);
                    }
                    OpCode::Add | OpCode::Sub | OpCode::Mul | OpCode::Div => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        let r = match op {
                            OpCode::Add => a.wrapping_add(b),
                            OpCode::Sub => a.wrapping_sub(b),
                            OpCode::Mul => a.wrapping_mul(b),
                            _ => {
                                if b == 0 {
                                    return Err(
                                        Box::new(VmError::DivZero { at: self.ip }) as Box<dyn std::error::Error>
                                    );
                                }
                                a.wrapping_div(b)
                            }
                        };
                        self.stack.push(r);
                    }
                    OpCode::Jnz => {
                        let target = self.read_i32() as usize;
                        if self.pop()? != 0 {
                            self.ip = target;
                        }
                    }
                    OpCode::Dup => {
                        let v = *self.stack.last().ok_or(VmError::StackUnderflow(self.ip))?;
                        self.stack.push(v);
                    }
                    OpCode::Pop => {
                        self.pop()?;
                    }
                    OpCode::Load => {
                        let i = self.read_u8() as usize;
                        self.stack.push(self.locals[i]);
                    }
                    OpCode::Store => {
                        let i = self.read_u8() as usize;
                        self.locals[i] = self.pop()?;
                    }
                    OpCode::Halt => return Ok(self.pop()?),
                }
            }
        }
    }
}

use machine::{jit, Machine, VmError};

/// The result as compared: the value, or the error's text and whether it
/// is the module's `VmError`.
type Shown = Result<i64, (String, bool)>;

fn shown(r: Result<i64, Box<dyn std::error::Error>>) -> Shown {
    r.map_err(|e| (e.to_string(), e.downcast_ref::<VmError>().is_some()))
}

fn check(code: &[u8], fuel: u32) -> Shown {
    let state = |m: Machine, r| (shown(r), m.ip, m.stack, m.locals);
    let mut m = Machine::new(code);
    let want = jit::plain::Machine::run(&mut m, fuel);
    let want = state(m, want);
    let mut m = Machine::new(code);
    let got = m.run(fuel);
    assert_eq!(state(m, got), want, "{code:?}");
    let mut m = Machine::new(code);
    let got = jit::specialize::Machine::run(&mut m, fuel);
    assert_eq!(state(m, got), want, "{code:?}");
    want.0
}

/// Held by each test of this file: one reads `jit::stats()` across runs.
static STATS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_portal_returning_boxed_errors_compiles_and_gives_them_back() {
    let _held = crate::common::lock(&STATS);
    // Only `Machine::new` (its `[0; 4]`) is left to Rust, not the module.
    let left = jit::left_to_rust();
    assert!(left.iter().all(|l| !l.starts_with("the module:")), "{left:?}");
    assert!(left.iter().any(|l| l.starts_with("Machine::new:")), "{left:?}");
    jit::config().set_threshold(0);
    let before = jit::stats();
    assert_eq!(check(&sum_to(1000), 100_000), Ok(500_500));
    let after = jit::stats();
    assert!(after.entries > before.entries && after.declined == before.declined, "{after:?} {:?}", jit::last_decline());
    // Each kind of error: made by `into()` from text, boxed by hand, and
    // converted by `?`.
    assert_eq!(check(&sum_to(1000), 50), Err(("out of fuel".to_string(), false)));
    let div_zero = assemble(&[Ins::Push(7), Ins::Push(0), Ins::Op(10), Ins::Op(8)]);
    assert_eq!(check(&div_zero, 100), Err(("division by zero at 11".to_string(), true)));
    assert_eq!(check(&[1, 8], 100), Err(("stack underflow at 1".to_string(), true)));
    assert_eq!(check(&[42], 100), Err(("bad opcode 0x2a".to_string(), true)));
}

#[test]
fn random_programs_with_boxed_errors_agree_with_plain() {
    let _held = crate::common::lock(&STATS);
    let mut rng = crate::common::Rng(0xb0_7e_44);
    for i in 0..crate::common::how_many(300) {
        jit::config().set_threshold([0, 1, 2, 5][i % 4]);
        let _ = check(&random_program(&mut rng), 1 + rng.below(300) as u32);
    }
}

/// A VM whose helper `pop` gives `Result<i64, Box<dyn Error>>` and turns a
/// missing value into an error with `ok_or("..")?`: a `String` error the `?`
/// converts into the box, by a residual call of Rust's own `From`. Before,
/// the analysis took that conversion for the `String` itself, declared an
/// outlined call with the wrong type, and rustc rejected the expansion.
#[jit_interpreter]
mod helper_vm {
    use jitgen::prelude::*;
    use std::error::Error;

    pub const PUSH: u8 = 0;
    pub const ADD: u8 = 1;
    pub const SUB: u8 = 2;
    pub const JNZ: u8 = 3;
    pub const DUP: u8 = 4;
    pub const HALT: u8 = 5;
    pub const SWAP: u8 = 6;

    pub struct Vm {
        pub code: Vec<u8>,
        pub ip: usize,
        pub stack: Vec<i64>,
    }

    impl Vm {
        pub fn new(code: Vec<u8>) -> Vm {
            Vm { code, ip: 0, stack: Vec::new() }
        }

        fn pop(&mut self) -> Result<i64, Box<dyn Error>> {
            let v = self.stack.pop().ok_or("stack underflow")?;
            Ok(v)
        }

        pub fn run(&mut self) -> Result<i64, Box<dyn Error>> {
            loop {
                hint!(global_merge_point);
                let ip = hint!(self.ip, promote);
                let op = *self.code.get(ip).ok_or("ran off the end")?;
                self.ip = ip + 1;
                match op {
                    PUSH => {
                        let v = self.code[self.ip] as i64;
                        self.ip += 1;
                        self.stack.push(v);
                    }
                    ADD => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_add(b));
                    }
                    SUB => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_sub(b));
                    }
                    JNZ => {
                        let t = self.code[self.ip] as usize;
                        self.ip += 1;
                        if self.pop()? != 0 {
                            self.ip = t;
                        }
                    }
                    DUP => {
                        let v = *self.stack.last().ok_or("empty stack")?;
                        self.stack.push(v);
                    }
                    SWAP => {
                        let n = self.stack.len();
                        if n < 2 {
                            return Err(format!("swap needs two values, has {n}").into());
                        }
                        self.stack.swap(n - 1, n - 2);
                    }
                    HALT => {
                        let v = self.pop()?;
                        return Ok(v);
                    }
                    other => return Err(format!("bad opcode {other}").into()),
                }
            }
        }
    }
}

#[test]
fn a_helper_converting_string_errors_into_the_box_compiles_and_agrees_with_plain() {
    use helper_vm::{jit, Vm};
    let _held = crate::common::lock(&STATS);
    let left = jit::left_to_rust();
    // `format!(..).into()` runs as Rust; the module is not left to Rust.
    assert!(left.iter().all(|l| !l.starts_with("the module:")), "{left:?}");
    jit::config().set_threshold(0);
    let before = jit::stats();
    // A countdown from 100, then the errors: an underflow, a bad opcode,
    // running off the end, a swap of one value.
    for code in [vec![0, 100, 0, 1, 2, 4, 3, 2, 5], vec![1, 5], vec![9], vec![0, 1], vec![0, 1, 6]] {
        let run = |r: Result<i64, Box<dyn std::error::Error>>| r.map_err(|e| e.to_string());
        let (mut a, mut b) = (Vm::new(code.clone()), Vm::new(code.clone()));
        let (got, want) = (run(a.run()), run(jit::plain::Vm::run(&mut b)));
        assert_eq!((got, a.ip, a.stack), (want, b.ip, b.stack), "{code:?}");
    }
    let after = jit::stats();
    assert!(after.entries > before.entries && after.declined == before.declined, "{after:?} {:?}", jit::last_decline());
}

/// Random straight-line programs of the helper VM (pushes, arithmetic,
/// `DUP`, `SWAP`, bad opcodes, then `HALT`): the underflows its helper
/// converts into the box, the errors `format!(..).into()` makes, and the
/// results agree with plain.
#[test]
fn random_programs_converting_string_errors_agree_with_plain() {
    use helper_vm::{jit, Vm};
    let _held = crate::common::lock(&STATS);
    let mut rng = crate::common::Rng(0x5e_7b_0c);
    let before = jit::stats();
    for i in 0..crate::common::how_many(300) {
        jit::config().set_threshold([0, 1, 2, 5][i % 4]);
        let mut code = vec![];
        for _ in 0..rng.below(12) {
            match rng.below(7) {
                // A value at least 7: never an opcode, if ever read as one.
                0 | 1 => code.extend([0, 7 + rng.below(40) as u8]),
                2 => code.push(1),
                3 => code.push(2),
                4 => code.push(4),
                5 => code.push(6),
                _ => code.push(if rng.below(3) == 0 { 7 + rng.below(9) as u8 } else { 4 }),
            }
        }
        code.extend([5, 5]);
        let run = |r: Result<i64, Box<dyn std::error::Error>>| r.map_err(|e| e.to_string());
        let (mut a, mut b) = (Vm::new(code.clone()), Vm::new(code.clone()));
        let (got, want) = (run(a.run()), run(jit::plain::Vm::run(&mut b)));
        assert_eq!((got, a.ip, a.stack), (want, b.ip, b.stack), "{code:?}");
    }
    assert!(jit::stats().entries > before.entries, "{:?}", jit::stats());
}
