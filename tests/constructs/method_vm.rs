//! A stack VM as a struct with methods, written as a new user writes one:
//! `run(&mut self) -> Result<i64, VmError>` over a borrowed `&[Instr]`, a
//! `Vec<i64>` operand stack and a `Vec<Frame>` of return addresses and
//! bases, errors by `?` from helper methods, the instruction pointer a
//! field promoted at the top of the loop, `Ret` promoting the popped
//! return address and truncating the stack to the frame's base. Every run
//! compares the whole final state (the result, the stack, the frames, the
//! instruction pointer and the fuel left) with `jit::plain`, through the
//! portal at several thresholds and through `jit::specialize`, on a
//! recursive fib and on random programs of calls, returns, jumps and
//! locals.

use jitgen::prelude::*;

#[jit_interpreter]
mod vm {
    use jitgen::prelude::*;

    /// One instruction.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Instr {
        Const(i64),
        /// Push local i of the current frame (`stack[base + i]`).
        Load(usize),
        /// Pop into local i of the current frame.
        Store(usize),
        Add,
        Sub,
        Lt,
        Jmp(usize),
        /// Pop; jump if it was zero.
        Jz(usize),
        /// Call `target` with the top `argc` values as its first locals.
        Call {
            target: usize,
            argc: usize,
        },
        /// Pop the result, drop the frame's locals, push the result.
        Ret,
        Halt,
    }

    #[derive(Debug, PartialEq)]
    pub enum VmError {
        StackUnderflow,
        BadJump(usize),
        BadLocal,
        OutOfFuel,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Frame {
        pub return_ip: usize,
        pub base: usize,
    }

    pub struct Vm<'p> {
        code: &'p [Instr],
        pub stack: Vec<i64>,
        pub frames: Vec<Frame>,
        pub ip: usize,
        pub fuel: u32,
    }

    impl<'p> Vm<'p> {
        pub fn new(code: &'p [Instr], fuel: u32) -> Self {
            Vm { code, stack: Vec::with_capacity(64), frames: Vec::new(), ip: 0, fuel }
        }

        fn pop(&mut self) -> Result<i64, VmError> {
            self.stack.pop().ok_or(VmError::StackUnderflow)
        }

        fn base(&self) -> usize {
            self.frames.last().map(|f| f.base).unwrap_or(0)
        }

        pub fn run(&mut self) -> Result<i64, VmError> {
            loop {
                hint!(global_merge_point);
                if self.fuel == 0 {
                    return Err(VmError::OutOfFuel);
                }
                self.fuel -= 1;
                let ip = hint!(self.ip, promote);
                let instr = match self.code.get(ip) {
                    Some(i) => *i,
                    None => return Err(VmError::BadJump(ip)),
                };
                self.ip += 1;
                match instr {
                    Instr::Const(v) => self.stack.push(v),
                    Instr::Load(i) => {
                        let at = self.base() + i;
                        if at >= self.stack.len() {
                            return Err(VmError::BadLocal);
                        }
                        let v = self.stack[at];
                        self.stack.push(v);
                    }
                    Instr::Store(i) => {
                        let v = self.pop()?;
                        let at = self.base() + i;
                        if at >= self.stack.len() {
                            return Err(VmError::BadLocal);
                        }
                        self.stack[at] = v;
                    }
                    Instr::Add => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_add(b));
                    }
                    Instr::Sub => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_sub(b));
                    }
                    Instr::Lt => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push((a < b) as i64);
                    }
                    Instr::Jmp(t) => self.ip = t,
                    Instr::Jz(t) => {
                        if self.pop()? == 0 {
                            self.ip = t;
                        }
                    }
                    Instr::Call { target, argc } => {
                        if argc > self.stack.len() {
                            return Err(VmError::StackUnderflow);
                        }
                        let base = self.stack.len() - argc;
                        self.frames.push(Frame { return_ip: self.ip, base });
                        self.ip = target;
                    }
                    Instr::Ret => {
                        let result = self.pop()?;
                        let frame = self.frames.pop().ok_or(VmError::StackUnderflow)?;
                        self.stack.truncate(frame.base);
                        self.stack.push(result);
                        self.ip = hint!(frame.return_ip, promote);
                    }
                    Instr::Halt => return self.pop(),
                }
            }
        }
    }
}

use vm::{jit, Frame, Instr, Vm, VmError};

/// What a run leaves: its result, the stack, the frames, the instruction
/// pointer and the fuel left.
type Final = (Result<i64, VmError>, Vec<i64>, Vec<Frame>, usize, u32);

fn state(m: Vm, r: Result<i64, VmError>) -> Final {
    (r, m.stack, m.frames, m.ip, m.fuel)
}

fn check(code: &[Instr], fuel: u32) -> Final {
    let mut m = Vm::new(code, fuel);
    let r = jit::plain::Vm::run(&mut m);
    let want = state(m, r);
    let mut m = Vm::new(code, fuel);
    let r = m.run();
    assert_eq!(state(m, r), want, "portal: {code:?} fuel {fuel}");
    let mut m = Vm::new(code, fuel);
    let r = jit::specialize::Vm::run(&mut m);
    assert_eq!(state(m, r), want, "specialize: {code:?} fuel {fuel}");
    want
}

/// `fib(n)` by recursion, `fib(0) = 0` and `fib(1) = 1`.
fn fib(n: i64) -> Vec<Instr> {
    use Instr::*;
    vec![
        Const(n),
        Call { target: 3, argc: 1 },
        Halt,
        // 3: fib(n): if n < 2 return n
        Load(0),
        Const(2),
        Lt,
        Jz(9),
        Load(0),
        Ret,
        // 9
        Load(0),
        Const(1),
        Sub,
        Call { target: 3, argc: 1 },
        Load(0),
        Const(2),
        Sub,
        Call { target: 3, argc: 1 },
        Add,
        Ret,
    ]
}

/// Held by each test of this file: thresholds are the module's.
static THRESHOLD: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_struct_vm_whose_returns_promote_their_address_agrees_with_plain() {
    let _held = crate::common::lock(&THRESHOLD);
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
    for threshold in [0, 1, 1000] {
        jit::config().set_threshold(threshold);
        jit::config().set_turn_checks(1);
        for (n, want) in [(0, 0), (1, 1), (10, 55), (20, 6765)] {
            assert_eq!(check(&fib(n), 1_000_000).0, Ok(want), "fib({n})");
        }
        // Out of fuel inside the recursion, with frames left.
        let (r, _, frames, _, _) = check(&fib(15), 500);
        assert_eq!((r, frames.is_empty()), (Err(VmError::OutOfFuel), false));
    }
    let s = jit::stats();
    assert!(s.entries > 0 && s.flexswitch_cases > 0 && s.declined == 0, "{s:?} {:?}", jit::last_decline());
}

#[test]
fn random_programs_of_a_struct_vm_agree_with_plain() {
    let _held = crate::common::lock(&THRESHOLD);
    let mut rng = crate::common::Rng(0x5eed_0fe);
    for i in 0..crate::common::how_many(300) {
        jit::config().set_threshold([0, 1, 2, 5][i % 4]);
        jit::config().set_turn_checks(1);
        let _ = check(&random_program(&mut rng), 1 + rng.below(400) as u32);
    }
}

/// A random program of up to 22 instructions ending in `Halt`: constants,
/// locals, arithmetic, jumps, calls of any instruction with up to two
/// arguments, returns (also with no frame), and halts.
fn random_program(rng: &mut crate::common::Rng) -> Vec<Instr> {
    use Instr::*;
    let len = 3 + rng.below(20) as usize;
    let mut code: Vec<Instr> = (0..len)
        .map(|_| match rng.below(14) {
            0 | 1 => Const(rng.below(7) as i64 - 2),
            2 => Load(rng.below(3) as usize),
            3 => Store(rng.below(3) as usize),
            4 => Add,
            5 => Sub,
            6 => Lt,
            7 => Jmp(rng.below(len as u64 + 1) as usize),
            8 | 9 => Jz(rng.below(len as u64 + 1) as usize),
            10 | 11 => Call { target: rng.below(len as u64) as usize, argc: rng.below(3) as usize },
            12 => Ret,
            _ if rng.below(3) == 0 => Halt,
            _ => Const(1),
        })
        .collect();
    code.push(Halt);
    code
}
