//! The same shape again as a new user first writes it: a `Vm` whose
//! operand stack, frames (`stack_offset`, return `ip`) and printed values
//! are fields, run over `&[Instr]` with a local `ip`. Locals are read and
//! written by indexing, `self.stack[off + i]`, with `off` taken by
//! `self.frames.last().map_or(0, |f| f.stack_offset)`; `Ret` promotes the
//! popped frame's `ip`. Nothing is checked by hand: a bad program panics
//! where Rust's indexing, `expect` or `unwrap` does, and `Halt` returns the
//! popped top of the stack, if any.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod vm {
    use jitgen::prelude::*;

    /// One instruction.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Instr {
        /// Push a constant.
        Const(i64),
        /// Pop b, pop a, push a + b.
        Add,
        /// Pop b, pop a, push a - b.
        Sub,
        /// Pop b, pop a, push 1 if a < b, else 0.
        Lt,
        /// Push local i of the current call.
        Get(usize),
        /// Pop into local i of the current call.
        Set(usize),
        /// Pop; if it is zero, continue at the index.
        Jz(usize),
        /// Continue at the index.
        Jmp(usize),
        /// Call the code at the index with the top n values as its locals.
        Call(usize, usize),
        /// Pop the result, drop the callee's locals, push the result and
        /// return to the caller.
        Ret,
        /// Pop a value into `out`.
        Print,
        /// Stop with the popped top of the stack.
        Halt,
    }

    /// A call: where its locals begin on the stack, and where it returns.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct StackFrame {
        /// The index of the call's local 0.
        pub stack_offset: usize,
        /// The caller's next instruction.
        pub ip: usize,
    }

    /// The machine.
    pub struct Vm {
        /// The operand stack, shared by all calls.
        pub stack: Vec<i64>,
        /// The calls under way.
        pub frames: Vec<StackFrame>,
        /// What `Print` printed.
        pub out: Vec<i64>,
    }

    impl Default for Vm {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Vm {
        /// An empty machine.
        pub fn new() -> Self {
            Vm { stack: Vec::with_capacity(256), frames: Vec::new(), out: Vec::new() }
        }

        fn pop(&mut self) -> i64 {
            self.stack.pop().expect("stack underflow")
        }

        /// Runs `code` from its first instruction to its `Halt`.
        pub fn run(&mut self, code: &[Instr]) -> Option<i64> {
            let mut ip = 0usize;
            loop {
                hint!(global_merge_point);
                let instr = hint!(code[ip], concrete);
                ip += 1;
                match instr {
                    Instr::Const(v) => self.stack.push(v),
                    Instr::Add => {
                        let b = self.pop();
                        let a = self.pop();
                        self.stack.push(a + b);
                    }
                    Instr::Sub => {
                        let b = self.pop();
                        let a = self.pop();
                        self.stack.push(a - b);
                    }
                    Instr::Lt => {
                        let b = self.pop();
                        let a = self.pop();
                        self.stack.push((a < b) as i64);
                    }
                    Instr::Get(i) => {
                        let off = self.frames.last().map_or(0, |f| f.stack_offset);
                        let v = self.stack[off + i];
                        self.stack.push(v);
                    }
                    Instr::Set(i) => {
                        let off = self.frames.last().map_or(0, |f| f.stack_offset);
                        let v = self.pop();
                        self.stack[off + i] = v;
                    }
                    Instr::Jz(t) => {
                        if self.pop() == 0 {
                            ip = t;
                        }
                    }
                    Instr::Jmp(t) => ip = t,
                    Instr::Call(t, n) => {
                        let stack_offset = self.stack.len() - n;
                        self.frames.push(StackFrame { stack_offset, ip });
                        ip = t;
                    }
                    Instr::Ret => {
                        let v = self.pop();
                        let f = self.frames.pop().unwrap();
                        self.stack.truncate(f.stack_offset);
                        self.stack.push(v);
                        ip = hint!(f.ip, promote);
                    }
                    Instr::Print => {
                        let v = self.pop();
                        self.out.push(v);
                    }
                    Instr::Halt => return self.stack.pop(),
                }
            }
        }
    }
}

/// Programs of this VM.
pub mod programs {
    use super::vm::Instr::{self, *};

    /// Recursive fib(n) (fib(0) = 0, fib(1) = 1), its argument local 0.
    pub fn fib(n: i64) -> Vec<Instr> {
        vec![
            Const(n),
            Call(3, 1),
            Halt,
            // 3: if n < 2, return n.
            Get(0),
            Const(2),
            Lt,
            Jz(9),
            Get(0),
            Ret,
            // 9: return fib(n - 1) + fib(n - 2).
            Get(0),
            Const(1),
            Sub,
            Call(3, 1),
            Get(0),
            Const(2),
            Sub,
            Call(3, 1),
            Add,
            Ret,
        ]
    }

    /// Ackermann's function A(m, n) for m, n ≥ 0, its arguments locals 0
    /// and 1.
    pub fn ackermann(m: i64, n: i64) -> Vec<Instr> {
        const A: usize = 4;
        vec![
            Const(m),
            Const(n),
            Call(A, 2),
            Halt,
            // A: if m < 1, return n + 1.
            Get(0),
            Const(1),
            Lt,
            Jz(12),
            Get(1),
            Const(1),
            Add,
            Ret,
            // 12: if n < 1, return A(m - 1, 1).
            Get(1),
            Const(1),
            Lt,
            Jz(22),
            Get(0),
            Const(1),
            Sub,
            Const(1),
            Call(A, 2),
            Ret,
            // 22: return A(m - 1, A(m, n - 1)).
            Get(0),
            Const(1),
            Sub,
            Get(0),
            Get(1),
            Const(1),
            Sub,
            Call(A, 2),
            Call(A, 2),
            Ret,
        ]
    }
}
