//! A stack VM written the way a tutorial writes one, then annotated for
//! jitgen with hints only: its frames own their locals.
//!
//! The machine keeps `Vec<StackFrame>`, each frame with its return address
//! and a `Vec` of locals filled from the operand stack at each call (popped
//! one by one and reversed, or split off the stack); the operand
//! stack is a field of the machine that every call shares. The stack VM of
//! `interpreters/stackvm` keeps its locals in the operand stack instead.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod vm {
    use jitgen::prelude::*;

    /// One instruction.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Op {
        /// Push a constant.
        Const(i64),
        /// Push local n of the current frame.
        GetLocal(usize),
        /// Pop into local n of the current frame.
        SetLocal(usize),
        /// Pop b, pop a, push a + b.
        Add,
        /// Pop b, pop a, push a - b.
        Sub,
        /// Pop b, pop a, push 1 if a < b else 0.
        Less,
        /// Pop b, pop a, push 1 if a == b else 0.
        Eq,
        /// Pop; continue at the given index if it was zero.
        JumpIfFalse(usize),
        /// Continue at the given index.
        Jump(usize),
        /// Call the procedure at the target with the top `argc` values as
        /// its locals, in the order they were pushed (popped one by one,
        /// then reversed).
        Call(usize, usize),
        /// The same, the values split off the stack (`Vec::split_off`).
        CallInOrder(usize, usize),
        /// Return to the caller, leaving the operand stack as it is.
        Return,
        /// Stop, returning the top of the stack.
        Halt,
    }

    /// What can go wrong running a program.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Error {
        /// A pop on an empty stack, or a call with fewer values than it takes.
        Underflow,
        /// The instruction pointer left the program.
        BadIp,
        /// `Return` with no frame to return from.
        NoFrame,
        /// A local the frame does not have.
        BadLocal,
    }

    /// A procedure's activation: where it returns, and its locals.
    #[derive(Debug)]
    pub struct StackFrame {
        pub return_ip: usize,
        pub locals: Vec<i64>,
    }

    /// The machine: the program, the shared operand stack, the frames (the
    /// outermost one made by `new`) and the instruction pointer.
    #[derive(Debug)]
    pub struct Machine {
        pub code: Vec<Op>,
        pub stack: Vec<i64>,
        pub frames: Vec<StackFrame>,
        pub ip: usize,
    }

    impl Machine {
        /// A machine at the start of `code`.
        pub fn new(code: Vec<Op>) -> Machine {
            Machine { code, stack: Vec::new(), frames: vec![StackFrame { return_ip: 0, locals: Vec::new() }], ip: 0 }
        }

        /// Makes the machine start its program again (an embedder running
        /// one program many times keeps its machine, and its compiled code).
        pub fn restart(&mut self) {
            self.stack.clear();
            self.frames.truncate(1);
            self.ip = 0;
        }

        fn pop(&mut self) -> Result<i64, Error> {
            self.stack.pop().ok_or(Error::Underflow)
        }

        /// Runs the program until `Halt`; returns the top of the stack.
        pub fn run(&mut self) -> Result<i64, Error> {
            loop {
                hint!(global_merge_point);
                let op = match self.code.get(hint!(self.ip, concrete)) {
                    Some(op) => *op,
                    None => return Err(Error::BadIp),
                };
                self.ip += 1;
                match op {
                    Op::Const(v) => self.stack.push(v),
                    Op::GetLocal(i) => {
                        let frame = self.frames.last().ok_or(Error::NoFrame)?;
                        let v = *frame.locals.get(i).ok_or(Error::BadLocal)?;
                        self.stack.push(v);
                    }
                    Op::SetLocal(i) => {
                        let v = self.pop()?;
                        let frame = self.frames.last_mut().ok_or(Error::NoFrame)?;
                        *frame.locals.get_mut(i).ok_or(Error::BadLocal)? = v;
                    }
                    Op::Add => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_add(b));
                    }
                    Op::Sub => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_sub(b));
                    }
                    Op::Less => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push((a < b) as i64);
                    }
                    Op::Eq => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push((a == b) as i64);
                    }
                    Op::JumpIfFalse(t) => {
                        if self.pop()? == 0 {
                            self.ip = t;
                        }
                    }
                    Op::Jump(t) => self.ip = t,
                    Op::Call(target, argc) => {
                        let mut locals = Vec::new();
                        for _ in 0..argc {
                            locals.push(self.pop()?);
                        }
                        locals.reverse();
                        self.frames.push(StackFrame { return_ip: self.ip, locals });
                        self.ip = target;
                    }
                    Op::CallInOrder(target, argc) => {
                        let base = self.stack.len().checked_sub(argc).ok_or(Error::Underflow)?;
                        let locals = self.stack.split_off(base);
                        self.frames.push(StackFrame { return_ip: self.ip, locals });
                        self.ip = target;
                    }
                    Op::Return => {
                        let frame = self.frames.pop().ok_or(Error::NoFrame)?;
                        self.ip = hint!(frame.return_ip, promote);
                    }
                    Op::Halt => return self.pop(),
                }
            }
        }
    }
}

/// Programs of the VM: the tests' and the benchmark's.
pub mod programs {
    use super::vm::{Op, Op::*};

    /// `fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)`.
    pub fn fib(n: i64) -> Vec<Op> {
        vec![
            Const(n),
            Call(3, 1),
            Halt,
            GetLocal(0), // 3
            Const(2),
            Less,
            JumpIfFalse(9),
            GetLocal(0),
            Return,
            GetLocal(0), // 9
            Const(1),
            Sub,
            Call(3, 1),
            GetLocal(0),
            Const(2),
            Sub,
            Call(3, 1),
            Add,
            Return,
        ]
    }

    /// Ackermann's function (local 0 is `m`), called by both call
    /// instructions.
    pub fn ackermann(m: i64, n: i64) -> Vec<Op> {
        vec![
            Const(m),
            Const(n),
            CallInOrder(4, 2),
            Halt,
            GetLocal(0), // 4: m == 0?
            Const(0),
            Eq,
            JumpIfFalse(12),
            GetLocal(1), // n + 1
            Const(1),
            Add,
            Return,
            GetLocal(1), // 12: n == 0?
            Const(0),
            Eq,
            JumpIfFalse(22),
            GetLocal(0), // ack(m - 1, 1)
            Const(1),
            Sub,
            Const(1),
            CallInOrder(4, 2),
            Return,
            GetLocal(0), // 22: ack(m - 1, ack(m, n - 1))
            Const(1),
            Sub,
            GetLocal(0),
            GetLocal(1),
            Const(1),
            Sub,
            Call(4, 2),
            CallInOrder(4, 2),
            Return,
        ]
    }

    /// `down(n) = n == 0 ? local(bottom) : n + down(n - 1)`: n frames deep, and
    /// at the bottom local `bottom` (0 is the argument; another one fails there).
    pub fn down(n: i64, bottom: usize) -> Vec<Op> {
        vec![
            Const(n),
            Call(3, 1),
            Halt,
            GetLocal(0), // 3
            Const(0),
            Eq,
            JumpIfFalse(10),
            GetLocal(bottom),
            Return,
            Halt,
            GetLocal(0), // 10
            GetLocal(0),
            Const(1),
            Sub,
            Call(3, 1),
            Add,
            Return,
        ]
    }

    /// `even(n) = n == 0 || odd(n - 1)`, `odd(n) = n != 0 && even(n - 1)`.
    pub fn even_odd(n: i64) -> Vec<Op> {
        vec![
            Const(n),
            Call(3, 1),
            Halt,
            GetLocal(0), // 3: even
            Const(0),
            Eq,
            JumpIfFalse(9),
            Const(1),
            Return,
            GetLocal(0), // 9
            Const(1),
            Sub,
            Call(14, 1),
            Return,
            GetLocal(0), // 14: odd
            Const(0),
            Eq,
            JumpIfFalse(20),
            Const(0),
            Return,
            GetLocal(0), // 20
            Const(1),
            Sub,
            Call(3, 1),
            Return,
        ]
    }

    /// `s = 0; i = n; while i != 0 { s = s + id(i); i = i - 1 }`, with the loop's
    /// variables the outermost frame's locals and `id(x) = x - (x + 0) + x` a
    /// procedure.
    pub fn sums(n: i64) -> Vec<Op> {
        vec![
            Const(0),
            Const(n),
            CallInOrder(4, 2), // locals: s, i
            Halt,
            GetLocal(1), // 4: loop head
            Const(0),
            Eq,
            JumpIfFalse(10),
            GetLocal(0),
            Return,
            GetLocal(0), // 10
            GetLocal(1),
            Call(24, 1),
            Add,
            SetLocal(0),
            GetLocal(1),
            Const(1),
            Sub,
            SetLocal(1),
            Jump(4),
            Halt,
            Halt,
            Halt,
            Halt,
            GetLocal(0), // 24: id
            GetLocal(0),
            Const(0),
            Add,
            Sub,
            GetLocal(0),
            Add,
            Return,
        ]
    }
}
