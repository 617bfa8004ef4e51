//! A register VM written the way a new user wrote one, not for jitgen, then
//! annotated with hints only. One register file (`regs: Vec<i64>`) serves
//! every call: a function's registers start at `base`, and `Call` opens the
//! callee's window `base` registers further on, its argument in the
//! callee's register 0, where its result comes back. Each call checks the
//! depth (`frames.len()` against a limit, an error past it) and grows the
//! register file when the window would run past it. `Ret` promotes the
//! popped return address. `Vm::run` is a method on the machine, whose
//! fields are its whole state.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod vm {
    use jitgen::prelude::*;

    /// One instruction; registers are numbers within the current window.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Op {
        /// `r = value`.
        LoadI(u8, i64),
        /// `d = s`.
        Mov(u8, u8),
        /// `d = a + b`, wrapping.
        Add(u8, u8, u8),
        /// `d = a - b`, wrapping.
        Sub(u8, u8, u8),
        /// `d = (a < b) as i64`.
        Lt(u8, u8, u8),
        /// Continue at the given index.
        Jmp(usize),
        /// Continue at the given index if register `r` is zero.
        Jz(u8, usize),
        /// Call the function at `target`, its window starting at register
        /// `base` of this one.
        Call { target: usize, base: u8 },
        /// Return register `r` (into the caller's register where the
        /// callee's window began), or end the run with it.
        Ret(u8),
    }

    /// Why a run stopped early.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum VmError {
        /// More frames than the machine's limit.
        StackOverflow { depth: usize },
        /// The program counter left the program.
        PcOutOfRange(usize),
    }

    /// A caller's activation: where it returns, and its window.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Frame {
        pub ret_pc: usize,
        pub base: usize,
    }

    /// The machine.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Vm {
        pub code: Vec<Op>,
        pub regs: Vec<i64>,
        pub frames: Vec<Frame>,
        pub pc: usize,
        pub base: usize,
        pub max_depth: usize,
        pub steps: u64,
    }

    /// Registers a window may use past its base.
    pub const WINDOW: usize = 256;

    impl Vm {
        pub fn new(code: Vec<Op>, pc: usize, max_depth: usize) -> Vm {
            Vm { code, regs: vec![0; WINDOW], frames: Vec::new(), pc, base: 0, max_depth, steps: 0 }
        }

        fn reg(&self, r: u8) -> i64 {
            self.regs[self.base + r as usize]
        }

        fn set(&mut self, r: u8, v: i64) {
            let i = self.base + r as usize;
            self.regs[i] = v;
        }

        /// Runs until the outermost `Ret`; returns its register.
        pub fn run(&mut self) -> Result<i64, VmError> {
            loop {
                hint!(global_merge_point);
                let op = match self.code.get(hint!(self.pc, concrete)) {
                    Some(op) => *op,
                    None => return Err(VmError::PcOutOfRange(self.pc)),
                };
                self.pc += 1;
                self.steps += 1;
                match op {
                    Op::LoadI(d, v) => self.set(d, v),
                    Op::Mov(d, s) => {
                        let v = self.reg(s);
                        self.set(d, v)
                    }
                    Op::Add(d, a, b) => {
                        let v = self.reg(a).wrapping_add(self.reg(b));
                        self.set(d, v)
                    }
                    Op::Sub(d, a, b) => {
                        let v = self.reg(a).wrapping_sub(self.reg(b));
                        self.set(d, v)
                    }
                    Op::Lt(d, a, b) => {
                        let v = (self.reg(a) < self.reg(b)) as i64;
                        self.set(d, v)
                    }
                    Op::Jmp(t) => self.pc = t,
                    Op::Jz(r, t) => {
                        if self.reg(r) == 0 {
                            self.pc = t;
                        }
                    }
                    Op::Call { target, base } => {
                        if self.frames.len() >= self.max_depth {
                            return Err(VmError::StackOverflow { depth: self.frames.len() });
                        }
                        self.frames.push(Frame { ret_pc: self.pc, base: self.base });
                        self.base += base as usize;
                        if self.regs.len() < self.base + WINDOW {
                            self.regs.resize(self.base + WINDOW, 0);
                        }
                        self.pc = target;
                    }
                    Op::Ret(r) => {
                        let v = self.reg(r);
                        match self.frames.pop() {
                            None => return Ok(v),
                            Some(f) => {
                                self.regs[self.base] = v;
                                self.base = f.base;
                                self.pc = hint!(f.ret_pc, promote);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Programs of the VM: the tests' and the benchmark's, each with the index
/// it starts at.
pub mod programs {
    use super::vm::Op::{self, *};

    /// Recursive fibonacci of `n`: `fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)`.
    pub fn fib(n: i64) -> (Vec<Op>, usize) {
        let code = vec![
            // fib, its argument in r0
            LoadI(1, 2),
            Lt(2, 0, 1),
            Jz(2, 4),
            Ret(0),
            LoadI(1, 1),
            Sub(3, 0, 1),
            Call { target: 0, base: 3 },
            LoadI(1, 2),
            Sub(4, 0, 1),
            Call { target: 0, base: 4 },
            Add(0, 3, 4),
            Ret(0),
            // the entry
            LoadI(0, n),
            Call { target: 0, base: 0 },
            Ret(0),
        ];
        (code, 12)
    }

    /// `sum(n) = n + sum(n - 1)`, `sum(0) = 0`: a recursion `n` deep.
    pub fn sum(n: i64) -> (Vec<Op>, usize) {
        let code = vec![
            LoadI(1, 0),
            Lt(2, 1, 0),
            Jz(2, 8),
            LoadI(1, 1),
            Sub(3, 0, 1),
            Call { target: 0, base: 3 },
            Add(0, 0, 3),
            Ret(0),
            Ret(0),
            // the entry
            LoadI(0, n),
            Call { target: 0, base: 0 },
            Ret(0),
        ];
        (code, 9)
    }

    /// `0 + 1 + ... + (n - 1)` in a loop, no call.
    pub fn sum_loop(n: i64) -> (Vec<Op>, usize) {
        let code = vec![
            LoadI(0, 0),
            LoadI(1, n),
            LoadI(2, 1),
            LoadI(3, 0),
            Lt(4, 3, 1),
            Jz(4, 9),
            Add(0, 0, 3),
            Add(3, 3, 2),
            Jmp(4),
            Ret(0),
        ];
        (code, 0)
    }
}
