//! A stack VM written the way a Rust tutorial writes one, then annotated for
//! jitgen with hints only.
//!
//! The program is a `Vec<Instruction>`; the VM keeps an operand stack (a
//! tuple struct around a `Vec`), a program counter and a call stack of
//! frames. `Call` pushes a frame that remembers where to return and where the
//! callee's locals start on the operand stack; `Load n` and `Store n` address
//! the current frame's locals.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod vm {
    use super::*;

    /// One instruction of the VM.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Instruction {
        /// Push a constant.
        Push(i64),
        /// Drop the top of the stack.
        Pop,
        /// Duplicate the top of the stack.
        Dup,
        /// Exchange the two top values.
        Swap,
        /// Pop b, pop a, push a + b.
        Add,
        /// Pop b, pop a, push a - b.
        Sub,
        /// Pop b, pop a, push a * b.
        Mul,
        /// Pop b, pop a, push 1 if a < b else 0.
        Lt,
        /// Add one to the top of the stack.
        Inc,
        /// Push local n of the current frame.
        Load(usize),
        /// Pop into local n of the current frame.
        Store(usize),
        /// Continue at the given index.
        Jump(usize),
        /// Pop; continue at the given index if it was zero.
        JumpIfZero(usize),
        /// Call the procedure at the given index; its locals start at the
        /// given number of values below the top of the stack.
        Call(usize, usize),
        /// Return from the current procedure, keeping the top of the stack.
        Ret,
        /// Print the top of the stack.
        Print,
        /// Stop, returning the top of the stack.
        Halt,
    }

    /// What can go wrong running a program.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum VmError {
        /// A pop or a peek on an empty stack.
        StackUnderflow,
        /// The program counter left the program.
        PcOutOfRange,
        /// `Load` or `Store` of a local the frame does not have.
        BadLocal,
        /// `Ret` with no frame to return to.
        NoFrame,
    }

    /// The operand stack.
    #[derive(Debug, Default, Clone)]
    pub struct Stack(Vec<i64>);

    impl Stack {
        pub fn new() -> Self {
            Stack(Vec::new())
        }

        pub fn push(&mut self, value: i64) {
            self.0.push(value);
        }

        pub fn pop(&mut self) -> Result<i64, VmError> {
            self.0.pop().ok_or(VmError::StackUnderflow)
        }

        pub fn peek(&self) -> Result<&i64, VmError> {
            self.0.last().ok_or(VmError::StackUnderflow)
        }

        pub fn peek_mut(&mut self) -> Result<&mut i64, VmError> {
            self.0.last_mut().ok_or(VmError::StackUnderflow)
        }

        pub fn get(&self, index: usize) -> Option<&i64> {
            self.0.get(index)
        }

        pub fn get_mut(&mut self, index: usize) -> Option<&mut i64> {
            self.0.get_mut(index)
        }

        pub fn len(&self) -> usize {
            self.0.len()
        }

        pub fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    }

    /// A procedure's activation: where it returns, and where its locals start.
    #[derive(Debug, Clone, Copy)]
    pub struct Frame {
        pub return_pc: usize,
        pub base: usize,
    }

    pub type CallStack = Vec<Frame>;

    /// The machine.
    #[derive(Debug)]
    pub struct Vm {
        code: Vec<Instruction>,
        pc: usize,
        stack: Stack,
        frames: CallStack,
    }

    impl Vm {
        pub fn new(code: Vec<Instruction>) -> Self {
            Vm { code, pc: 0, stack: Stack::new(), frames: CallStack::new() }
        }

        /// Makes the machine start its program again (an embedder running
        /// one program many times keeps its machine, and its compiled code).
        pub fn restart(&mut self) {
            self.pc = 0;
            self.stack = Stack::new();
            self.frames = CallStack::new();
        }

        fn base(&self) -> usize {
            self.frames.last().map_or(0, |f| f.base)
        }

        /// Runs the program until `Halt`; returns the top of the stack.
        pub fn run(&mut self) -> Result<i64, VmError> {
            use Instruction::*;
            loop {
                hint!(global_merge_point);
                let instruction = match self.code.get(hint!(self.pc, concrete)) {
                    Some(i) => i,
                    None => return Err(VmError::PcOutOfRange),
                };
                self.pc += 1;
                match instruction {
                    Push(value) => self.stack.push(*value),
                    Pop => {
                        self.stack.pop()?;
                    }
                    Dup => {
                        let top = *self.stack.peek()?;
                        self.stack.push(top);
                    }
                    Swap => {
                        let (b, a) = (self.stack.pop()?, self.stack.pop()?);
                        self.stack.push(b);
                        self.stack.push(a);
                    }
                    Add => {
                        let (b, a) = (self.stack.pop()?, self.stack.pop()?);
                        self.stack.push(a.wrapping_add(b));
                    }
                    Sub => {
                        let (b, a) = (self.stack.pop()?, self.stack.pop()?);
                        self.stack.push(a.wrapping_sub(b));
                    }
                    Mul => {
                        let (b, a) = (self.stack.pop()?, self.stack.pop()?);
                        self.stack.push(a.wrapping_mul(b));
                    }
                    Lt => {
                        let (b, a) = (self.stack.pop()?, self.stack.pop()?);
                        self.stack.push(if a < b { 1 } else { 0 });
                    }
                    Inc => *self.stack.peek_mut()? += 1,
                    Load(n) => {
                        let value = *self.stack.get(self.base() + n).ok_or(VmError::BadLocal)?;
                        self.stack.push(value);
                    }
                    Store(n) => {
                        let value = self.stack.pop()?;
                        let slot = self.base() + n;
                        *self.stack.get_mut(slot).ok_or(VmError::BadLocal)? = value;
                    }
                    Jump(target) => self.pc = *target,
                    JumpIfZero(target) => {
                        if self.stack.pop()? == 0 {
                            self.pc = *target;
                        }
                    }
                    Call(target, args) => {
                        let base = self.stack.len().checked_sub(*args).ok_or(VmError::StackUnderflow)?;
                        self.frames.push(Frame { return_pc: self.pc, base });
                        self.pc = *target;
                    }
                    Ret => {
                        let frame = self.frames.pop().ok_or(VmError::NoFrame)?;
                        let result = self.stack.pop()?;
                        self.stack.0.truncate(frame.base);
                        self.stack.push(result);
                        self.pc = hint!(frame.return_pc, promote);
                    }
                    Print => println!("{}", self.stack.peek()?),
                    Halt => return self.stack.pop(),
                }
            }
        }
    }
}

/// Programs of the VM: the tests' and the benchmark's.
pub mod programs {
    use super::vm::{Instruction, Instruction::*};

    /// `sum = 0; i = n; while i != 0 { sum += term(i); i -= 1 }`, then
    /// `Halt` with the sum (locals 0: `i`, 1: `sum`); `term` pushes
    /// `term(i)`, and `procedures` follow the loop, at `14 + term.len()`.
    pub fn summing_loop(n: i64, term: &[Instruction], procedures: &[Instruction]) -> Vec<Instruction> {
        let exit = 12 + term.len();
        let mut code = vec![Push(n), Push(0), Load(0), JumpIfZero(exit), Load(1)];
        code.extend_from_slice(term);
        code.extend([Add, Store(1), Load(0), Push(1), Sub, Store(0), Jump(2), Load(1), Halt]);
        code.extend_from_slice(procedures);
        code
    }

    /// Sum of 1..=n.
    pub fn counted_loop(n: i64) -> Vec<Instruction> {
        summing_loop(n, &[Load(0)], &[])
    }

    /// Sum of i * j over i in 1..=a, j in 1..=b: locals i, j, sum.
    pub fn nested_loops(a: i64, b: i64) -> Vec<Instruction> {
        vec![
            Push(a),
            Push(0),
            Push(0),
            Load(0), // 3: outer head
            JumpIfZero(27),
            Push(b),
            Store(1),
            Load(1), // 7: inner head
            JumpIfZero(21),
            Load(2),
            Load(0),
            Load(1),
            Mul,
            Add,
            Store(2),
            Load(1),
            Push(1),
            Sub,
            Store(1),
            Jump(7),
            Halt,    // 20: never reached
            Load(0), // 21
            Push(1),
            Sub,
            Store(0),
            Jump(3),
            Halt,    // 26: never reached
            Load(2), // 27
            Halt,
        ]
    }

    /// Sum of square(i) for i in 1..=n, `square` a procedure with one argument.
    pub fn procedure_in_a_loop(n: i64) -> Vec<Instruction> {
        // `square` follows the loop, at 14 + 2.
        summing_loop(n, &[Load(0), Call(16, 1)], &[Load(0), Load(0), Mul, Ret])
    }

    /// `fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2)`, recursively: a
    /// procedure at 3 with one argument.
    pub fn recursive_fib(n: i64) -> Vec<Instruction> {
        vec![
            Push(n),
            Call(3, 1),
            Halt,
            Load(0), // 3: fib
            Push(2),
            Lt,
            JumpIfZero(9),
            Load(0),
            Ret,
            Load(0), // 9
            Push(1),
            Sub,
            Call(3, 1),
            Load(0),
            Push(2),
            Sub,
            Call(3, 1),
            Add,
            Ret,
        ]
    }

    /// `down(n) = n == 0 ? 0 : n + down(n - 1)`, n frames deep; at the
    /// bottom it loads local `bottom` (0 is its argument; another fails
    /// there, as deep as the recursion goes).
    pub fn deep_recursion(n: i64, bottom: usize) -> Vec<Instruction> {
        vec![
            Push(n),
            Call(3, 1),
            Halt,
            Load(0), // 3: down
            JumpIfZero(12),
            Load(0),
            Load(0),
            Push(1),
            Sub,
            Call(3, 1),
            Add,
            Ret,
            Load(bottom), // 12
            Ret,
        ]
    }

    /// Prints n, n + 1, n - 1, n, ..., 1, 2, then returns 0.
    pub fn printing(n: i64) -> Vec<Instruction> {
        vec![
            Push(n),
            Dup, // 1: loop head
            JumpIfZero(11),
            Print,
            Dup,
            Inc,
            Print,
            Pop,
            Push(-1),
            Add,
            Jump(1),
            Halt, // 11
        ]
    }
}
