//! An interpreter whose calls recurse in Rust: its portal calls itself once
//! per call of the interpreted program (the other way to write calls, beside
//! frames saved in a `Vec`), with an operand stack worked on by helpers that
//! take it by `&mut`, as Rust programmers write them. Compiled code calls the code of the called
//! function directly (see `jitgen_runtime::direct`).

use jitgen::prelude::*;

/// Outside the module: a residual call, which needs the list in memory.
pub fn count(stack: &mut Vec<i64>) -> i64 {
    stack.len() as i64
}

#[jit_interpreter]
pub mod rec {
    use super::*;

    #[derive(Clone, Copy, PartialEq, Debug)]
    pub enum Op {
        Arg,
        Const(i64),
        Get(usize),
        Set(usize),
        Add,
        Sub,
        Mul,
        Lt,
        JumpIfZero(usize),
        Jump(usize),
        /// Calls function `g` on the top of the stack.
        Call(usize),
        /// Fails with the top of the stack when its low six bits are `k`.
        FailIf(i64),
        Ret,
        /// Pushes `k` copies of the top.
        Dup(usize),
        /// Replaces the top `k` values with their sum.
        Sum(usize),
        /// Swaps the two top values, twice.
        Twice,
        /// Pushes the stack's length (counted outside the module).
        Count,
    }

    #[derive(Clone, Copy, PartialEq, Debug)]
    pub enum Trap {
        Underflow,
        Fail(i64),
    }

    pub struct Function {
        pub code: Vec<Op>,
    }

    fn pop(stack: &mut Vec<i64>) -> Result<i64, Trap> {
        stack.pop().ok_or(Trap::Underflow)
    }

    fn peek(stack: &mut Vec<i64>) -> Result<i64, Trap> {
        let v = pop(stack)?;
        stack.push(v);
        Ok(v)
    }

    fn dup(stack: &mut Vec<i64>, k: usize) -> Result<(), Trap> {
        for _ in 0..k {
            let v = peek(stack)?;
            stack.push(v);
        }
        Ok(())
    }

    fn sum(stack: &mut Vec<i64>, k: usize) -> Result<(), Trap> {
        let mut t = 0i64;
        for _ in 0..k {
            t = t.wrapping_add(pop(stack)?);
        }
        stack.push(t);
        Ok(())
    }

    fn swap(stack: &mut Vec<i64>) -> Result<(), Trap> {
        let b = pop(stack)?;
        let a = pop(stack)?;
        stack.push(b);
        stack.push(a);
        Ok(())
    }

    fn counted(stack: &mut Vec<i64>) -> i64 {
        super::count(stack)
    }

    /// Pops two values and pushes `op` of them (`Add`, `Sub`, `Mul`, `Lt`).
    fn binary(stack: &mut Vec<i64>, op: Op) -> Result<(), Trap> {
        let b = pop(stack)?;
        let a = pop(stack)?;
        stack.push(match op {
            Op::Add => a.wrapping_add(b),
            Op::Sub => a.wrapping_sub(b),
            Op::Mul => a.wrapping_mul(b),
            _ => (a < b) as i64,
        });
        Ok(())
    }

    /// The same language run by a method, the other way Rust programmers
    /// write it: the machine counts calls and the deepest nesting.
    pub struct Machine {
        pub calls: u64,
        pub depth: u64,
        pub deepest: u64,
    }

    impl Machine {
        /// Runs function `f` of `program` on `arg`, as [`call`] does.
        pub fn run(&mut self, program: &[Function], f: usize, arg: i64) -> Result<i64, Trap> {
            self.calls += 1;
            self.depth += 1;
            if self.depth > self.deepest {
                self.deepest = self.depth;
            }
            let code = &program[f].code;
            let mut stack: Vec<i64> = Vec::new();
            let mut locals = vec![0i64; 4];
            let mut pc = 0;
            loop {
                hint!(global_merge_point);
                let op = hint!(code[pc], concrete);
                pc += 1;
                match op {
                    Op::Arg => stack.push(arg),
                    Op::Const(c) => stack.push(c),
                    Op::Get(k) => stack.push(locals[k]),
                    Op::Set(k) => locals[k] = pop(&mut stack)?,
                    Op::Add | Op::Sub | Op::Mul | Op::Lt => binary(&mut stack, op)?,
                    Op::JumpIfZero(t) => {
                        if pop(&mut stack)? == 0 {
                            pc = t;
                        }
                    }
                    Op::Jump(t) => pc = t,
                    Op::Call(g) => {
                        let a = pop(&mut stack)?;
                        let r = self.run(program, g, a)?;
                        stack.push(r);
                    }
                    Op::FailIf(k) => {
                        let v = pop(&mut stack)?;
                        if v & 63 == k {
                            return Err(Trap::Fail(v));
                        }
                    }
                    Op::Ret => {
                        self.depth -= 1;
                        return pop(&mut stack);
                    }
                    Op::Dup(k) => dup(&mut stack, k)?,
                    Op::Sum(k) => sum(&mut stack, k)?,
                    Op::Twice => {
                        swap(&mut stack)?;
                        swap(&mut stack)?;
                    }
                    Op::Count => {
                        let n = counted(&mut stack);
                        stack.push(n);
                    }
                }
            }
        }
    }

    /// Runs function `f` of `program` on `arg`, with four locals.
    pub fn call(program: &[Function], f: usize, arg: i64) -> Result<i64, Trap> {
        let code = &program[f].code;
        let mut stack: Vec<i64> = Vec::new();
        let mut locals = vec![0i64; 4];
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                Op::Arg => stack.push(arg),
                Op::Const(c) => stack.push(c),
                Op::Get(k) => stack.push(locals[k]),
                Op::Set(k) => locals[k] = pop(&mut stack)?,
                Op::Add => {
                    let b = pop(&mut stack)?;
                    let a = pop(&mut stack)?;
                    stack.push(a.wrapping_add(b));
                }
                Op::Sub => {
                    let b = pop(&mut stack)?;
                    let a = pop(&mut stack)?;
                    stack.push(a.wrapping_sub(b));
                }
                Op::Mul => {
                    let b = pop(&mut stack)?;
                    let a = pop(&mut stack)?;
                    stack.push(a.wrapping_mul(b));
                }
                Op::Lt => {
                    let b = pop(&mut stack)?;
                    let a = pop(&mut stack)?;
                    stack.push((a < b) as i64);
                }
                Op::JumpIfZero(t) => {
                    if pop(&mut stack)? == 0 {
                        pc = t;
                    }
                }
                Op::Jump(t) => pc = t,
                Op::Call(g) => {
                    let a = pop(&mut stack)?;
                    let r = call(program, g, a)?;
                    stack.push(r);
                }
                Op::FailIf(k) => {
                    let v = pop(&mut stack)?;
                    if v & 63 == k {
                        return Err(Trap::Fail(v));
                    }
                }
                Op::Ret => return pop(&mut stack),
                Op::Dup(k) => dup(&mut stack, k)?,
                Op::Sum(k) => sum(&mut stack, k)?,
                Op::Twice => {
                    let s = &mut stack;
                    swap(s)?;
                    swap(s)?;
                }
                Op::Count => {
                    let n = counted(&mut stack);
                    stack.push(n);
                }
            }
        }
    }
}

/// Programs of the interpreter: the tests' and the benchmark's.
pub mod programs {
    use super::rec::{Function, Op::*};

    /// fib(n) = n < 2 ? n : fib(n - 1) + fib(n - 2).
    pub fn fib() -> Vec<Function> {
        vec![Function {
            code: vec![
                Arg,
                Const(2),
                Lt,
                JumpIfZero(6),
                Arg,
                Ret, // n < 2
                Arg,
                Const(1),
                Sub,
                Call(0),
                Arg,
                Const(2),
                Sub,
                Call(0),
                Add,
                Ret,
            ],
        }]
    }

    /// Function 0 calls function 1 (a counted loop summing 0..arg) on each of
    /// arg, arg - 1, ..., 1, recursively.
    pub fn loop_in_callee() -> Vec<Function> {
        vec![
            Function {
                code: vec![
                    Const(0),
                    Arg,
                    Lt,
                    JumpIfZero(12), // 0 < arg, else return 0
                    Arg,
                    Call(1),
                    Arg,
                    Const(1),
                    Sub,
                    Call(0),
                    Add,
                    Ret,
                    Const(0),
                    Ret,
                ],
            },
            Function {
                code: vec![
                    Const(0),
                    Set(0),
                    Arg,
                    Set(1), // acc = 0, i = arg
                    Const(0),
                    Get(1),
                    Lt,
                    JumpIfZero(18), // while 0 < i
                    Get(0),
                    Get(1),
                    Add,
                    Set(0),
                    Get(1),
                    Const(1),
                    Sub,
                    Set(1),
                    Jump(4),
                    Jump(4),
                    Get(0),
                    Ret,
                ],
            },
        ]
    }

    /// f(arg) = arg < 1 ? 0 : arg + g(arg - 1), g(arg) = arg < 1 ? 0 : 2 * arg + f(arg - 1):
    /// a mutual recursion.
    pub fn mutual() -> Vec<Function> {
        let f = |k: i64, other: usize| Function {
            code: vec![
                Arg,
                Const(1),
                Lt,
                JumpIfZero(6),
                Const(0),
                Ret, // arg < 1
                Arg,
                Const(k),
                Mul,
                Arg,
                Const(1),
                Sub,
                Call(other),
                Add,
                Ret,
            ],
        };
        vec![f(1, 1), f(2, 0)]
    }

    /// `down(arg) = arg == 0 ? bottom : arg + down(arg - 1)`, where the bottom
    /// fails when `fail` (with `Trap::Fail(0)`), else returns 0.
    pub fn down(fail: bool) -> Vec<Function> {
        let bottom = if fail { vec![Const(0), FailIf(0), Const(0), Ret] } else { vec![Const(0), Ret] };
        let mut code = vec![Arg, JumpIfZero(8), Arg, Arg, Const(1), Sub, Call(0), Add, Ret];
        code[1] = JumpIfZero(9);
        code.extend(bottom);
        vec![Function { code }]
    }
}
