//! A stack VM written the way a new user wrote one, not for jitgen, then
//! annotated with hints only: `interpret` is a free function whose operand
//! stack (a tuple struct around a `Vec<isize>`), instruction pointer and
//! call stack are locals. A procedure's arguments lie below the stack
//! offset its frame recorded at the call: `GetArg(i)` reads
//! `stack[offset - 1 - i]` and `SetArg(i)` writes it, so a procedure returns
//! its results in place of its arguments. `Ret` promotes the popped return
//! address. `Print` and `PrintStack` write into the output given to
//! `interpret`; the final operand stack is its result.
//!
//! [`asm::assemble`] reads the VM's assembly language (`Proc name` ...
//! `End`, `label name`, `Call name`).
//!
//! [`framed`] is the same kind of VM written as a method of a `Vm` whose
//! stack and frames are fields of `self`; [`indexed`] the same again as a
//! new user first writes it, indexing its stack and panicking on a bad
//! program.

use jitgen::prelude::*;

pub mod framed;
pub mod indexed;

#[jit_interpreter]
pub mod vm {
    use jitgen::prelude::*;
    use std::io::Write;

    /// One instruction.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Instruction {
        /// Push a constant.
        Push(isize),
        /// Drop the top of the stack.
        Pop,
        /// Pop b, pop a, push a + b.
        Add,
        /// Pop b, pop a, push a - b.
        Sub,
        /// Add one to the top of the stack, in place.
        Incr,
        /// Subtract one from the top of the stack, in place.
        Decr,
        /// Continue at the given index.
        Jump(usize),
        /// If the top of the stack is zero, pop it and continue at the index.
        JE(usize),
        /// If the top of the stack is not zero, pop it and continue at the index.
        JNE(usize),
        /// If the top of the stack is positive, pop it and continue at the index.
        JGT(usize),
        /// If the top of the stack is negative, pop it and continue at the index.
        JLT(usize),
        /// If the top of the stack is at least zero, pop it and continue at the index.
        JGE(usize),
        /// If the top of the stack is at most zero, pop it and continue at the index.
        JLE(usize),
        /// Push local i of the current procedure (`stack[offset + i]`).
        Get(usize),
        /// Write the top of the stack into local i, without popping.
        Set(usize),
        /// Push argument i of the current procedure (`stack[offset - 1 - i]`).
        GetArg(usize),
        /// Write the top of the stack into argument i, without popping.
        SetArg(usize),
        /// Nothing (what `End` and `label` assemble to).
        Noop,
        /// Print the top of the stack, without popping.
        Print,
        /// Print the whole operand stack, the number of frames and the top one.
        PrintStack,
        /// Call the procedure at the given index.
        Call(usize),
        /// Return to the caller.
        Ret,
    }

    /// The operand stack.
    #[derive(Debug, Default)]
    pub struct Stack(pub Vec<isize>);

    impl Stack {
        pub fn push(&mut self, value: isize) {
            self.0.push(value);
        }

        pub fn pop(&mut self) -> isize {
            self.0.pop().expect("popped an empty stack")
        }

        pub fn peek(&self) -> isize {
            *self.0.last().expect("peeked at an empty stack")
        }

        pub fn peek_mut(&mut self) -> &mut isize {
            self.0.last_mut().expect("peeked at an empty stack")
        }

        pub fn get(&self, index: usize) -> &isize {
            self.0.get(index).expect("read past the stack")
        }

        pub fn get_mut(&mut self, index: usize) -> &mut isize {
            self.0.get_mut(index).expect("wrote past the stack")
        }
    }

    /// A procedure's activation: the stack's length at the call (its
    /// arguments lie below), and where to return.
    #[derive(Debug, Clone, Copy)]
    pub struct StackFrame {
        pub stack_offset: usize,
        pub ip: usize,
    }

    pub type CallStack = Vec<StackFrame>;

    /// Runs `program` from its first instruction until the instruction
    /// pointer leaves it; returns the operand stack.
    pub fn interpret(program: &[Instruction], output: &mut Vec<u8>) -> Vec<isize> {
        use Instruction::*;
        let mut stack = Stack(Vec::new());
        let mut pointer: usize = 0;
        let mut call_stack = CallStack::new();
        while let Some(instruction) = program.get(pointer) {
            hint!(global_merge_point);
            pointer += 1;
            match hint!(instruction, concrete) {
                Push(d) => stack.push(*d),
                Pop => {
                    stack.pop();
                }
                Add => {
                    let b = stack.pop();
                    let a = stack.pop();
                    stack.push(a + b);
                }
                Sub => {
                    let b = stack.pop();
                    let a = stack.pop();
                    stack.push(a - b);
                }
                Incr => *stack.peek_mut() += 1,
                Decr => *stack.peek_mut() -= 1,
                Jump(p) => pointer = *p,
                JE(p) => {
                    if stack.peek() == 0 {
                        stack.pop();
                        pointer = *p;
                    }
                }
                JNE(p) => {
                    if stack.peek() != 0 {
                        stack.pop();
                        pointer = *p;
                    }
                }
                JGT(p) => {
                    if stack.peek() > 0 {
                        stack.pop();
                        pointer = *p;
                    }
                }
                JLT(p) => {
                    if stack.peek() < 0 {
                        stack.pop();
                        pointer = *p;
                    }
                }
                JGE(p) => {
                    if stack.peek() >= 0 {
                        stack.pop();
                        pointer = *p;
                    }
                }
                JLE(p) => {
                    if stack.peek() <= 0 {
                        stack.pop();
                        pointer = *p;
                    }
                }
                Get(i) => {
                    let offset = call_stack.last().map_or(0, |frame| frame.stack_offset);
                    stack.push(*stack.get(offset + *i));
                }
                Set(i) => {
                    let offset = call_stack.last().map_or(0, |frame| frame.stack_offset);
                    *stack.get_mut(offset + *i) = stack.peek();
                }
                GetArg(i) => {
                    let offset = call_stack.last().unwrap().stack_offset;
                    stack.push(*stack.get(offset - 1 - *i));
                }
                SetArg(i) => {
                    let offset = call_stack.last().unwrap().stack_offset;
                    *stack.get_mut(offset - 1 - *i) = stack.peek();
                }
                Noop => {}
                Print => {
                    writeln!(output, "{}", stack.peek()).unwrap();
                }
                PrintStack => {
                    for i in 0..stack.0.len() {
                        write!(output, "{} ", stack.0[i]).unwrap();
                    }
                    write!(output, "depth {}", call_stack.len()).unwrap();
                    if let Some(frame) = call_stack.last() {
                        write!(output, " [{} {}]", frame.stack_offset, frame.ip).unwrap();
                    }
                    writeln!(output).unwrap();
                }
                Call(p) => {
                    call_stack.push(StackFrame { stack_offset: stack.0.len(), ip: pointer });
                    pointer = *p;
                }
                Ret => pointer = hint!(call_stack.pop().unwrap().ip, promote),
            }
        }
        stack.0
    }
}

/// The VM's assembly language, one instruction per line: an instruction's
/// name and its operand (a number, or a label or procedure name), `Proc
/// name` ... `End` around a procedure, `label name` before an instruction.
/// `Proc` assembles to a jump past its `End`; `End` and `label` to `Noop`.
pub mod asm {
    use super::vm::Instruction::{self, *};
    use std::collections::HashMap;

    /// Assembles `source`; an unknown instruction, a missing or malformed
    /// operand, an unknown label or an unclosed `Proc` is an error naming
    /// its line.
    pub fn assemble(source: &str) -> Result<Vec<Instruction>, String> {
        let lines: Vec<(usize, Vec<&str>)> = source
            .lines()
            .enumerate()
            .map(|(n, l)| (n + 1, l.split('#').next().unwrap_or("").split_whitespace().collect::<Vec<_>>()))
            .filter(|(_, words)| !words.is_empty())
            .collect();
        // Every line is one instruction: labels and procedures are their indices.
        let mut labels: HashMap<&str, usize> = HashMap::new();
        let mut open: Vec<(usize, usize)> = vec![];
        let mut ends: HashMap<usize, usize> = HashMap::new();
        for (index, (line, words)) in lines.iter().enumerate() {
            match words[0] {
                "Proc" | "label" => {
                    let name = *words.get(1).ok_or(format!("line {line}: `{}` needs a name", words[0]))?;
                    let at = if words[0] == "Proc" { index + 1 } else { index };
                    if labels.insert(name, at).is_some() {
                        return Err(format!("line {line}: `{name}` is defined twice"));
                    }
                    if words[0] == "Proc" {
                        open.push((index, *line));
                    }
                }
                "End" => {
                    let (start, _) = open.pop().ok_or(format!("line {line}: `End` without `Proc`"))?;
                    ends.insert(start, index + 1);
                }
                _ => {}
            }
        }
        if let Some((_, line)) = open.pop() {
            return Err(format!("line {line}: `Proc` without `End`"));
        }
        let mut code = vec![];
        for (index, (line, words)) in lines.iter().enumerate() {
            let operand = || words.get(1).copied().ok_or(format!("line {line}: `{}` needs an operand", words[0]));
            let number = || -> Result<isize, String> {
                let w = operand()?;
                w.parse().map_err(|_| format!("line {line}: `{w}` is not a number"))
            };
            let index_operand = || -> Result<usize, String> {
                let n = number()?;
                usize::try_from(n).map_err(|_| format!("line {line}: `{n}` is negative"))
            };
            let target = || -> Result<usize, String> {
                let w = operand()?;
                labels.get(w).copied().ok_or(format!("line {line}: no label or procedure `{w}`"))
            };
            code.push(match words[0] {
                "Proc" => Jump(ends[&index]),
                "End" | "label" | "Noop" => Noop,
                "Push" => Push(number()?),
                "Pop" => Pop,
                "Add" => Add,
                "Sub" => Sub,
                "Incr" => Incr,
                "Decr" => Decr,
                "Jump" => Jump(target()?),
                "JE" => JE(target()?),
                "JNE" => JNE(target()?),
                "JGT" => JGT(target()?),
                "JLT" => JLT(target()?),
                "JGE" => JGE(target()?),
                "JLE" => JLE(target()?),
                "Get" => Get(index_operand()?),
                "Set" => Set(index_operand()?),
                "GetArg" => GetArg(index_operand()?),
                "SetArg" => SetArg(index_operand()?),
                "Print" => Print,
                "PrintStack" => PrintStack,
                "Call" => Call(target()?),
                "Ret" => Ret,
                other => return Err(format!("line {line}: unknown instruction `{other}`")),
            });
        }
        Ok(code)
    }
}

/// Programs of the VM: the tests' and the benchmark's.
pub mod programs {
    /// Recursive fibonacci (fib(1) = fib(2) = 1) of `n`, then
    /// `after`: the procedure leaves its result in place of its argument.
    pub fn fib(n: isize, after: &str) -> String {
        format!(
            "Proc fib
                Decr
                JLE retOne
                GetArg 0
                Call fib
                GetArg 0
                Decr
                Call fib
                Add
                SetArg 0
                Pop
                Ret
                label retOne
                    Push 1
                    Ret
            End

            Push {n}
            Call fib
            {after}"
        )
    }

    /// Ackermann's function of `m` and `n`, then `after`: the procedure
    /// takes m below n and leaves its result in place of both.
    pub fn ackermann(m: isize, n: isize, after: &str) -> String {
        format!(
            "Proc ack
                GetArg 1
                JNE mPositive
                Pop
                GetArg 0
                Incr
                SetArg 1
                Pop
                Pop
                Ret
                label mPositive
                GetArg 0
                JNE nPositive
                Pop
                GetArg 1
                Decr
                Push 1
                Call ack
                SetArg 1
                Pop
                Pop
                Ret
                label nPositive
                GetArg 1
                Decr
                GetArg 1
                GetArg 0
                Decr
                Call ack
                Call ack
                SetArg 1
                Pop
                Pop
                Ret
            End

            Push {m}
            Push {n}
            Call ack
            {after}"
        )
    }

    /// A loop summing `1..=n` with locals read through `Get` and `Set`:
    /// leaves the sum on the stack.
    pub fn sum_loop(n: isize) -> String {
        format!(
            "Push 0      # local 0: the sum
             Push {n}    # local 1: the counter
             label head
             Get 1
             JLE done
             Pop
             Get 0
             Get 1
             Add
             Set 0
             Pop
             Get 1
             Decr
             Set 1
             Pop
             Jump head
             label done
             Pop"
        )
    }
}
