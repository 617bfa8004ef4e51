//! A VM as a Rust programmer writes one around a borrowed program:
//! `struct Machine<'a> { code: &'a [u8], ip, stack, locals: [i64; 4] }`
//! with `impl<'a> Machine<'a>`, operands decoded by `read_u8` and
//! `read_i32` (`i32::from_le_bytes` of an array bound by `let`), opcodes
//! by the module's `TryFrom<u8>`, its errors an enum with `Display`, and
//! the instruction pointer promoted by a statement (`hint!(self.ip,
//! promote);`, which makes the split cell the promoted value).
//!
//! Before, the expansion did not compile (the portal's direct entry named
//! `'a` undeclared, and the content of a `&[u8]` field was read as
//! `*(&x).iter()`); with that fixed, every compilation declined (a field of
//! a struct with lifetime parameters); and `self` was kept whole (a struct
//! with lifetimes, a reference field, `read_i32`'s array), so the program
//! was red. Now `self` splits: the borrowed program is green, as a `&[u8]`
//! parameter is. Whole final states are compared with `jit::plain`,
//! through the portal and `jit::specialize`, on fixed and random programs.

use jitgen::prelude::*;

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
        OutOfFuel,
    }

    impl fmt::Display for VmError {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            match self {
                VmError::StackUnderflow(ip) => write!(f, "stack underflow at {ip}"),
                VmError::BadOp(b) => write!(f, "bad opcode {b:#x}"),
                VmError::DivZero { at } => write!(f, "division by zero at {at}"),
                VmError::OutOfFuel => write!(f, "out of fuel"),
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

        pub fn run(&mut self, mut fuel: u32) -> Result<i64, VmError> {
            loop {
                hint!(global_merge_point);
                if fuel == 0 {
                    return Err(VmError::OutOfFuel);
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
                                    return Err(VmError::DivZero { at: self.ip });
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
                    OpCode::Halt => return self.pop(),
                }
            }
        }
    }
}

use machine::{jit, Machine};

/// An instruction of the program builder: an opcode and its operand bytes
/// (a jump's target is an instruction's index until `assemble`).
#[derive(Clone, Debug)]
pub(crate) enum Ins {
    Push(i32),
    Op(u8),
    Jnz(usize),
    Local(u8, u8),
}

pub(crate) fn assemble(program: &[Ins]) -> Vec<u8> {
    let size = |i: &Ins| match i {
        Ins::Push(_) | Ins::Jnz(_) => 5,
        Ins::Op(_) => 1,
        Ins::Local(..) => 2,
    };
    let at: Vec<usize> = program.iter().scan(0, |a, i| Some(std::mem::replace(a, *a + size(i)))).collect();
    let mut code = vec![];
    for i in program {
        match i {
            Ins::Push(v) => {
                code.push(0);
                code.extend(v.to_le_bytes());
            }
            Ins::Op(op) => code.push(*op),
            Ins::Jnz(t) => {
                code.push(3);
                code.extend((at[*t] as i32).to_le_bytes());
            }
            Ins::Local(op, k) => code.extend([*op, *k]),
        }
    }
    code
}

fn check(code: &[u8], fuel: u32) {
    let state = |m: Machine, r| (r, m.ip, m.stack, m.locals);
    let mut m = Machine::new(code);
    let want = jit::plain::Machine::run(&mut m, fuel);
    let want = state(m, want);
    let mut m = Machine::new(code);
    let got = m.run(fuel);
    assert_eq!(state(m, got), want, "{code:?}");
    let mut m = Machine::new(code);
    let got = jit::specialize::Machine::run(&mut m, fuel);
    assert_eq!(state(m, got), want, "{code:?}");
}

/// `sum = 0; n = N; do { sum += n; n -= 1 } while n != 0; sum`.
pub(crate) fn sum_to(n: i32) -> Vec<u8> {
    use Ins::*;
    assemble(&[
        Push(0),
        Local(7, 0),
        Push(n),
        Local(7, 1),
        // 4
        Local(6, 0),
        Local(6, 1),
        Op(1),
        Local(7, 0),
        Local(6, 1),
        Push(1),
        Op(2),
        Op(4),
        Local(7, 1),
        Jnz(4),
        Local(6, 0),
        Op(8),
    ])
}

/// Held by each test of this file: one reads `jit::stats()` across runs.
static STATS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_machine_borrowing_its_program_compiles_with_the_program_green() {
    let _held = crate::common::lock(&STATS);
    assert!(jit::left_to_rust().iter().all(|l| l.starts_with("Machine::new:")), "{:?}", jit::left_to_rust());
    jit::config().set_threshold(0);
    let before = jit::stats();
    check(&sum_to(1000), 100_000);
    let after = jit::stats();
    assert!(after.entries > before.entries && after.declined == 0, "{after:?} {:?}", jit::last_decline());
    // The program is green: the portal's specializer takes it as its one
    // green argument (with `self` kept whole it took the machine), and its
    // code reads no instruction byte at run time.
    let code = sum_to(1000);
    let listing = jit::specialize::__Machine_run(&code).listing().to_string();
    assert!(!listing.contains("load.u8"), "{listing}");
    for n in [1, 2, 10, 1000] {
        check(&sum_to(n), 100_000);
        check(&sum_to(n), 25);
    }
    check(&[0, 7, 0, 0, 0, 0, 0, 0, 0, 10, 8], 100);
    // The case for `Dup` at 8 is first compiled where the stack holds one
    // value (its underflow path pops unchecked while writing the stack
    // back), then reached again with it empty: the case cache once shared
    // it (a lower bound of a length was not in its key), and the write-back
    // stored a length of -1.
    check(&[0, 3, 0, 0, 0, 4, 7, 3, 4, 6, 0, 1, 5, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 10, 3, 8, 0, 0, 0, 8], 269);
    check(&[1, 8], 100);
    check(&[42], 100);
}

#[test]
fn random_programs_of_a_machine_borrowing_its_program_agree_with_plain() {
    let _held = crate::common::lock(&STATS);
    let mut rng = crate::common::Rng(0xb0_77_0e);
    for i in 0..crate::common::how_many(300) {
        jit::config().set_threshold([0, 1, 2, 5][i % 4]);
        check(&random_program(&mut rng), 1 + rng.below(300) as u32);
    }
}

/// A random program of up to 15 instructions ending in `Halt`: pushes,
/// arithmetic (division by zero too), jumps, stack and local operations,
/// and now and then a bad opcode.
pub(crate) fn random_program(rng: &mut crate::common::Rng) -> Vec<u8> {
    let len = 1 + rng.below(14) as usize;
    let mut program: Vec<Ins> = (0..len)
        .map(|_| match rng.below(10) {
            0 | 1 => Ins::Push(rng.below(7) as i32 - 3),
            2 => Ins::Op([1, 2, 9, 10][rng.below(4) as usize]),
            3 => Ins::Jnz(rng.below(len as u64 + 1) as usize),
            4 => Ins::Op(4),
            5 => Ins::Op(5),
            6 => Ins::Local(6, rng.below(4) as u8),
            7 => Ins::Local(7, rng.below(4) as u8),
            8 => Ins::Op(if rng.below(4) == 0 { 11 + rng.below(5) as u8 } else { 8 }),
            _ => Ins::Op(1),
        })
        .collect();
    program.push(Ins::Op(8));
    assemble(&program)
}
