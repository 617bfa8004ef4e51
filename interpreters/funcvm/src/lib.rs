//! A stack VM written the way a new user wrote one, then annotated for
//! jitgen with hints only: a table of functions, each with its own code, and
//! a `Vec<Frame>` whose frames hold their function, their instruction
//! pointer and the base of their locals on the one operand stack (as clox
//! keeps `frame->ip`). The machine has no program counter of its own: the
//! dispatch loop reads the current function and instruction from the top
//! frame, so both are promoted (`hint!(.., promote)`), not `concrete` (a
//! read from the frames, which change, cannot be green).

use jitgen::prelude::*;

#[jit_interpreter]
pub mod vm {
    use jitgen::prelude::*;

    /// One instruction.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Op {
        /// Push a constant.
        Push(i64),
        /// Drop the top of the stack.
        Pop,
        /// Push local n of the current frame.
        Load(u32),
        /// Pop into local n of the current frame.
        Store(u32),
        /// Pop b, pop a, push a + b.
        Add,
        /// Pop b, pop a, push a - b.
        Sub,
        /// Pop b, pop a, push a * b.
        Mul,
        /// Pop b, pop a, push 1 if a < b else 0.
        Lt,
        /// Pop; continue at the given index of this function if it was zero.
        Jz(u32),
        /// Continue at the given index of this function.
        Jmp(u32),
        /// Call the function of that number; its arguments are the top
        /// values of the stack (its first locals).
        Call(u32),
        /// Return the top of the stack to the caller (from the outermost
        /// function: the result of the run).
        Ret,
    }

    /// A function: how many arguments it takes, and its code.
    #[derive(Debug, Clone)]
    pub struct Function {
        pub arity: usize,
        pub code: Vec<Op>,
    }

    /// An activation: which function, where in it, and where its locals
    /// start on the operand stack.
    #[derive(Debug, Clone, Copy)]
    pub struct Frame {
        pub func: usize,
        pub ip: usize,
        pub bp: usize,
    }

    /// What can go wrong running a program.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Error {
        /// A pop on an empty stack, or a call with fewer values than its
        /// function takes.
        StackUnderflow,
        /// A call of a function the program does not have.
        NoSuchFunction(u32),
        /// A local the frame does not have.
        BadLocal(u32),
        /// The instruction pointer left the function.
        FellOff,
        /// Nothing to run.
        NoFrame,
    }

    /// The machine.
    #[derive(Debug)]
    pub struct Vm {
        functions: Vec<Function>,
        stack: Vec<i64>,
        frames: Vec<Frame>,
    }

    impl Vm {
        pub fn new(functions: Vec<Function>) -> Self {
            Vm { functions, stack: Vec::new(), frames: Vec::new() }
        }

        /// Sets up a call of function `f` with `args`, for [`Vm::run`].
        pub fn prepare(&mut self, f: usize, args: &[i64]) {
            self.stack.clear();
            self.frames.clear();
            self.stack.extend_from_slice(args);
            self.frames.push(Frame { func: f, ip: 0, bp: 0 });
        }

        fn pop(&mut self) -> Result<i64, Error> {
            self.stack.pop().ok_or(Error::StackUnderflow)
        }

        /// Runs until the outermost function returns.
        pub fn run(&mut self) -> Result<i64, Error> {
            loop {
                hint!(global_merge_point);
                let frame = *self.frames.last().ok_or(Error::NoFrame)?;
                let func = hint!(frame.func, promote);
                let ip = hint!(frame.ip, promote);
                let op = match self.functions[func].code.get(ip) {
                    Some(op) => *op,
                    None => return Err(Error::FellOff),
                };
                if let Some(f) = self.frames.last_mut() {
                    f.ip += 1;
                }
                match op {
                    Op::Push(v) => self.stack.push(v),
                    Op::Pop => {
                        self.pop()?;
                    }
                    Op::Load(i) => {
                        let v = *self.stack.get(frame.bp + i as usize).ok_or(Error::BadLocal(i))?;
                        self.stack.push(v);
                    }
                    Op::Store(i) => {
                        let v = self.pop()?;
                        *self.stack.get_mut(frame.bp + i as usize).ok_or(Error::BadLocal(i))? = v;
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
                    Op::Mul => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_mul(b));
                    }
                    Op::Lt => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push((a < b) as i64);
                    }
                    Op::Jz(t) => {
                        if self.pop()? == 0 {
                            if let Some(f) = self.frames.last_mut() {
                                f.ip = t as usize;
                            }
                        }
                    }
                    Op::Jmp(t) => {
                        if let Some(f) = self.frames.last_mut() {
                            f.ip = t as usize;
                        }
                    }
                    Op::Call(g) => {
                        let callee = self.functions.get(g as usize).ok_or(Error::NoSuchFunction(g))?;
                        let bp = self.stack.len().checked_sub(callee.arity).ok_or(Error::StackUnderflow)?;
                        self.frames.push(Frame { func: g as usize, ip: 0, bp });
                    }
                    Op::Ret => {
                        let result = self.pop()?;
                        let done = self.frames.pop().ok_or(Error::NoFrame)?;
                        self.stack.truncate(done.bp);
                        if self.frames.is_empty() {
                            return Ok(result);
                        }
                        self.stack.push(result);
                    }
                }
            }
        }
    }
}

/// Programs of the VM: the tests' and the benchmark's (function 0 is the
/// one to call).
pub mod programs {
    use super::vm::{Function, Op::*};

    /// `fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)`.
    pub fn fib() -> Vec<Function> {
        let code = vec![
            Load(0),
            Push(2),
            Lt,
            Jz(6),
            Load(0),
            Ret,
            Load(0), // 6
            Push(1),
            Sub,
            Call(0),
            Load(0),
            Push(2),
            Sub,
            Call(0),
            Add,
            Ret,
        ];
        vec![Function { arity: 1, code }]
    }

    /// Ackermann's function of two arguments.
    pub fn ackermann() -> Vec<Function> {
        let code = vec![
            Load(0),
            Jz(14),
            Load(1),
            Jz(18),
            Load(0), // ack(m - 1, ack(m, n - 1))
            Push(1),
            Sub,
            Load(0),
            Load(1),
            Push(1),
            Sub,
            Call(0),
            Call(0),
            Ret,
            Load(1), // 14: m == 0
            Push(1),
            Add,
            Ret,
            Load(0), // 18: n == 0
            Push(1),
            Sub,
            Push(1),
            Call(0),
            Ret,
        ];
        vec![Function { arity: 2, code }]
    }

    /// `even(n)` (function 0) and `odd(n)` (function 1), each calling the
    /// other on `n - 1`: 1 for an even `n`, else 0.
    pub fn even_odd() -> Vec<Function> {
        let body = |other: u32, at_zero: i64| Function {
            arity: 1,
            code: vec![Load(0), Jz(7), Load(0), Push(1), Sub, Call(other), Ret, Push(at_zero), Ret],
        };
        vec![body(1, 1), body(0, 0)]
    }

    /// `down(n) = n == 0 ? local(bottom) : n + down(n - 1)`, `n` frames deep:
    /// local 0 is the argument; another fails at the bottom.
    pub fn down(bottom: u32) -> Vec<Function> {
        let code = vec![Load(0), Jz(9), Load(0), Load(0), Push(1), Sub, Call(0), Add, Ret, Load(bottom), Ret];
        vec![Function { arity: 1, code }]
    }

    /// The sum of `square(i)` for `i` in `1..=n`: a loop (function 0, local
    /// 0 the counter and 1 the sum) calling function 1.
    pub fn sum_of_squares() -> Vec<Function> {
        let main = vec![
            Push(0), // the sum, local 1
            Load(0), // 1: loop head
            Jz(13),
            Load(1),
            Load(0),
            Call(1),
            Add,
            Store(1),
            Load(0),
            Push(1),
            Sub,
            Store(0),
            Jmp(1),
            Load(1), // 13
            Ret,
        ];
        let square = vec![Load(0), Load(0), Mul, Ret];
        vec![Function { arity: 1, code: main }, Function { arity: 1, code: square }]
    }
}
