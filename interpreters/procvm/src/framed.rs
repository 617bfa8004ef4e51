//! The same VM's shape with its state in `self`, as a Rust programmer
//! writes a VM as a struct: a `Vm` whose operand stack and call frames
//! (`stack_offset`, return `ip`) are fields, run by a method. `Ret`
//! promotes the popped return address and truncates the stack to the
//! frame's offset, `Get(i)` / `Set(i)` address `stack[offset + i]`, and
//! `Lt` pushes `if a < b { 1 } else { 0 }`. Errors are values: a run that
//! underflows, leaves its code or runs out of fuel returns a message.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod vm {
    use jitgen::prelude::*;

    /// One instruction.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Op {
        /// Push a constant.
        Push(i64),
        /// Pop b, pop a, push a + b (wrapping).
        Add,
        /// Pop b, pop a, push a - b (wrapping).
        Sub,
        /// Pop b, pop a, push 1 if a < b, else 0.
        Lt,
        /// Pop; if it is zero, continue at the index.
        JumpIfFalse(usize),
        /// Continue at the index.
        Jump(usize),
        /// Push local i of the current call (`stack[offset + i]`).
        Get(usize),
        /// Write the top of the stack into local i, without popping.
        Set(usize),
        /// Call the code at the index with the top n values as its locals.
        Call(usize, usize),
        /// Pop the result, drop the callee's locals, push the result and
        /// return to the caller.
        Ret,
        /// Drop the top of the stack.
        Pop,
        /// Stop with the popped value.
        Halt,
    }

    /// A call's frame: where its locals begin, and where to return.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct StackFrame {
        /// The stack's length below the call's locals.
        pub stack_offset: usize,
        /// The return address.
        pub ip: usize,
    }

    /// The machine: its operand stack and its call frames.
    pub struct Vm {
        /// The operand stack.
        pub stack: Vec<i64>,
        /// The frames of the calls under way, the newest last.
        pub frames: Vec<StackFrame>,
    }

    impl Vm {
        /// A machine with nothing on its stacks.
        pub fn new() -> Vm {
            Vm { stack: Vec::new(), frames: Vec::new() }
        }

        fn pop(&mut self) -> Result<i64, String> {
            self.stack.pop().ok_or_else(|| "stack underflow".to_string())
        }

        /// Runs `code` from its first instruction for at most `fuel` steps.
        pub fn run(&mut self, code: &[Op], fuel: usize) -> Result<i64, String> {
            let mut ip = 0;
            let mut steps = 0;
            loop {
                hint!(global_merge_point);
                if ip >= code.len() || steps == fuel {
                    return Err(format!("stopped at {ip} after {steps} steps"));
                }
                steps += 1;
                let op = hint!(code[ip], concrete);
                ip += 1;
                match op {
                    Op::Push(v) => self.stack.push(v),
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
                    Op::Lt => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(if a < b { 1 } else { 0 });
                    }
                    Op::JumpIfFalse(t) => {
                        if self.pop()? == 0 {
                            ip = t;
                        }
                    }
                    Op::Jump(t) => ip = t,
                    Op::Get(i) => {
                        let offset = self.frames.last().map_or(0, |f| f.stack_offset);
                        let v = *self.stack.get(offset + i).ok_or_else(|| format!("no local {i}"))?;
                        self.stack.push(v);
                    }
                    Op::Set(i) => {
                        let offset = self.frames.last().map_or(0, |f| f.stack_offset);
                        let v = *self.stack.last().ok_or_else(|| "stack underflow".to_string())?;
                        if offset + i >= self.stack.len() {
                            return Err(format!("no local {i}"));
                        }
                        self.stack[offset + i] = v;
                    }
                    Op::Call(target, nargs) => {
                        if nargs > self.stack.len() {
                            return Err("too few arguments".to_string());
                        }
                        let stack_offset = self.stack.len() - nargs;
                        self.frames.push(StackFrame { stack_offset, ip });
                        ip = target;
                    }
                    Op::Ret => {
                        let v = self.pop()?;
                        let frame = self.frames.pop().ok_or_else(|| "return outside a call".to_string())?;
                        self.stack.truncate(frame.stack_offset);
                        self.stack.push(v);
                        ip = hint!(frame.ip, promote);
                    }
                    Op::Pop => {
                        self.pop()?;
                    }
                    Op::Halt => return self.pop(),
                }
            }
        }
    }
}

/// Programs of this VM.
pub mod programs {
    use super::vm::Op::{self, *};

    /// Recursive fib(n) (fib(0) = 0, fib(1) = 1): each call's argument is
    /// its local 0, and each return goes through a promoted `Ret`.
    pub fn fib(n: i64) -> Vec<Op> {
        vec![
            Push(n),
            Call(4, 1),
            Halt,
            Halt,
            Get(0),
            Push(2),
            Lt,
            JumpIfFalse(10),
            Get(0),
            Ret,
            Get(0),
            Push(1),
            Sub,
            Call(4, 1),
            Get(0),
            Push(2),
            Sub,
            Call(4, 1),
            Add,
            Ret,
        ]
    }

    /// Ackermann's function A(m, n) for m, n ≥ 0: a call's locals are m
    /// (local 0) and n (local 1), and the inner call's result is the outer
    /// call's second argument, so that returns land at two places.
    pub fn ackermann(m: i64, n: i64) -> Vec<Op> {
        const A: usize = 4;
        vec![
            Push(m),
            Push(n),
            Call(A, 2),
            Halt,
            // A: if m < 1, return n + 1.
            Get(0),
            Push(1),
            Lt,
            JumpIfFalse(12),
            Get(1),
            Push(1),
            Add,
            Ret,
            // 12: if n < 1, return A(m - 1, 1).
            Get(1),
            Push(1),
            Lt,
            JumpIfFalse(22),
            Get(0),
            Push(1),
            Sub,
            Push(1),
            Call(A, 2),
            Ret,
            // 22: return A(m - 1, A(m, n - 1)).
            Get(0),
            Push(1),
            Sub,
            Get(0),
            Get(1),
            Push(1),
            Sub,
            Call(A, 2),
            Call(A, 2),
            Ret,
        ]
    }
}
