//! A stack VM as a new user writes one, found by trying it: its frames in
//! a local `Vec` named by a type alias (`type CallStack =
//! Vec<StackFrame>; let mut call_stack = CallStack::new();`), each turn
//! reading the top frame's offset (`call_stack.last().map_or(0, |s|
//! s.stack_offset)`), `Ret` promoting the popped frame's `ip` and then
//! asking whether the call stack is empty; `Display` for its values and
//! errors. A recursion spills the frames of `call_stack` onto the
//! continuation stack; the first operation after the promotion needs them
//! back, so the path stops there and starts again after they come back.
//! It used to start again without the promoted value it had been
//! delivered: the generating extension panicked ("the callee delivered its
//! result") and the compilation was declined. Whole final states are
//! compared with `jit::plain`, on random call programs too.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod call_stack_vm {
    use jitgen::prelude::*;
    use std::fmt;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Value {
        Int(i64),
        Bool(bool),
        Nil,
    }

    impl fmt::Display for Value {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Value::Int(i) => write!(f, "{i}"),
                Value::Bool(b) => write!(f, "{b}"),
                Value::Nil => write!(f, "nil"),
            }
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Op {
        Const(i64),
        Add,
        Sub,
        Lt,
        Dup,
        Pop,
        Get(usize),
        Set(usize),
        JumpIfFalse(usize),
        Jump(usize),
        Call(usize, usize),
        Ret,
        Print,
        Halt,
    }

    #[derive(Debug)]
    pub enum VmError {
        StackUnderflow,
        TypeError(&'static str),
        BadLocal(usize),
    }

    impl fmt::Display for VmError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                VmError::StackUnderflow => write!(f, "stack underflow"),
                VmError::TypeError(s) => write!(f, "type error: {s}"),
                VmError::BadLocal(i) => write!(f, "bad local {i}"),
            }
        }
    }

    #[derive(Debug, Clone, Copy)]
    pub struct StackFrame {
        pub stack_offset: usize,
        pub ip: usize,
    }

    type CallStack = Vec<StackFrame>;

    #[derive(Debug)]
    pub struct Vm {
        pub stack: Vec<Value>,
        pub output: Vec<String>,
    }

    impl Vm {
        pub fn new() -> Vm {
            Vm { stack: Vec::new(), output: Vec::new() }
        }

        fn pop(&mut self) -> Result<Value, VmError> {
            self.stack.pop().ok_or(VmError::StackUnderflow)
        }

        fn pop_int(&mut self) -> Result<i64, VmError> {
            match self.pop()? {
                Value::Int(i) => Ok(i),
                _ => Err(VmError::TypeError("expected an int")),
            }
        }

        /// Runs `code` from its start (a call of the function at `target`
        /// pushes a frame: where the caller's operands start, and where it
        /// goes on).
        pub fn run(&mut self, code: &[Op]) -> Result<Value, VmError> {
            let mut call_stack = CallStack::new();
            call_stack.push(StackFrame { stack_offset: 0, ip: 0 });
            let mut ip = 0usize;
            loop {
                hint!(global_merge_point);
                let op = hint!(code[ip], concrete);
                ip += 1;
                let offset = call_stack.last().map_or(0, |s| s.stack_offset);
                match op {
                    Op::Const(c) => self.stack.push(Value::Int(c)),
                    Op::Add => {
                        let b = self.pop_int()?;
                        let a = self.pop_int()?;
                        self.stack.push(Value::Int(a.wrapping_add(b)));
                    }
                    Op::Sub => {
                        let b = self.pop_int()?;
                        let a = self.pop_int()?;
                        self.stack.push(Value::Int(a.wrapping_sub(b)));
                    }
                    Op::Lt => {
                        let b = self.pop_int()?;
                        let a = self.pop_int()?;
                        self.stack.push(Value::Bool(a < b));
                    }
                    Op::Dup => {
                        let v = *self.stack.last().ok_or(VmError::StackUnderflow)?;
                        self.stack.push(v);
                    }
                    Op::Pop => {
                        self.pop()?;
                    }
                    Op::Get(i) => {
                        let v = *self.stack.get(offset + i).ok_or(VmError::BadLocal(i))?;
                        self.stack.push(v);
                    }
                    Op::Set(i) => {
                        let v = self.pop()?;
                        let slot = self.stack.get_mut(offset + i).ok_or(VmError::BadLocal(i))?;
                        *slot = v;
                    }
                    Op::JumpIfFalse(t) => {
                        if let Value::Bool(false) | Value::Nil = self.pop()? {
                            ip = t;
                        }
                    }
                    Op::Jump(t) => ip = t,
                    Op::Call(target, argc) => {
                        let stack_offset = self.stack.len().checked_sub(argc).ok_or(VmError::StackUnderflow)?;
                        call_stack.push(StackFrame { stack_offset, ip });
                        ip = target;
                    }
                    Op::Ret => {
                        let result = self.pop()?;
                        let frame = call_stack.pop().ok_or(VmError::StackUnderflow)?;
                        self.stack.truncate(frame.stack_offset);
                        self.stack.push(result);
                        ip = hint!(frame.ip, promote);
                        if call_stack.is_empty() {
                            return Ok(result);
                        }
                    }
                    Op::Print => {
                        let v = self.pop()?;
                        self.output.push(format!("{v}"));
                    }
                    Op::Halt => return self.stack.last().copied().ok_or(VmError::StackUnderflow),
                }
            }
        }
    }
}

use call_stack_vm::Op::{self, *};
use call_stack_vm::Vm;

/// `main` calls `fib(n)` (its function at 3) and halts.
fn fib_program(n: i64) -> Vec<Op> {
    let fib = [
        Get(0),
        Const(2),
        Lt,
        JumpIfFalse(6),
        Get(0),
        Ret,
        Get(0),
        Const(1),
        Sub,
        Call(0, 1),
        Get(0),
        Const(2),
        Sub,
        Call(0, 1),
        Add,
        Ret,
    ];
    let mut code = vec![Const(n), Call(3, 1), Halt];
    code.extend(fib.iter().map(|op| match *op {
        JumpIfFalse(t) => JumpIfFalse(t + 3),
        Call(t, a) => Call(t + 3, a),
        o => o,
    }));
    code
}

/// The result and the whole machine, through `jit::plain`, the portal and
/// `jit::specialize`: the same.
fn check(code: &[Op]) -> String {
    let whole = |run: fn(&mut Vm, &[Op]) -> Result<call_stack_vm::Value, call_stack_vm::VmError>| {
        let (r, vm) = crate::common::whole(Vm::new(), |vm| run(vm, code));
        format!("{r:?} {vm}")
    };
    let want = whole(call_stack_vm::jit::plain::Vm::run);
    assert_eq!(whole(Vm::run), want, "portal {code:?}");
    assert_eq!(whole(call_stack_vm::jit::specialize::Vm::run), want, "specialize {code:?}");
    want
}

#[test]
fn a_local_call_stack_promoting_its_return_compiles_and_agrees_with_plain() {
    call_stack_vm::jit::config().set_threshold(0);
    assert!(check(&fib_program(15)).starts_with("Ok(Int(610))"));
    let s = call_stack_vm::jit::stats();
    assert!(s.compilations > 0 && s.spills > 0, "{s:?}");
    assert_eq!(s.declined, 0, "{s:?} {:?}", call_stack_vm::jit::last_decline());
    // Random programs: calls of a function that counts its argument down,
    // recursing, beside arithmetic, jumps and local accesses that may fail.
    let mut rng = crate::common::Rng(0xca11_57ac);
    let mut outcomes = [0usize; 2];
    for threshold in [0, 2] {
        call_stack_vm::jit::config().set_threshold(threshold);
        for _ in 0..crate::common::how_many(300) {
            // A jump to the program, then the function at 1: `n < 1 ? n :
            // n < 7 ? f(n - 1) + n : 0` (a recursion at most 7 deep); the
            // program's jumps go forwards only.
            let mut c = vec![
                Jump(20),
                Get(0),
                Const(1),
                Lt,
                JumpIfFalse(7),
                Get(0),
                Ret,
                Get(0),
                Const(7),
                Lt,
                JumpIfFalse(18),
                Get(0),
                Const(1),
                Sub,
                Call(1, 1),
                Get(0),
                Add,
                Ret,
                Const(0),
                Ret,
            ];
            let len = c.len() + 3 + rng.below(16) as usize;
            c.push(Const(rng.below(8) as i64));
            while c.len() < len {
                let to = c.len() + 1 + rng.below((len - c.len()) as u64) as usize;
                c.push(match rng.below(13) {
                    0 | 1 => Call(1, 1),
                    2 => Const(rng.below(9) as i64 - 2),
                    3 => Add,
                    4 => Sub,
                    5 => Lt,
                    6 => Dup,
                    7 => Pop,
                    8 => Get(rng.below(3) as usize),
                    9 => Set(rng.below(3) as usize),
                    10 => JumpIfFalse(to),
                    11 => Print,
                    _ => Halt,
                });
            }
            c.push(Halt);
            outcomes[usize::from(check(&c).starts_with("Err"))] += 1;
        }
    }
    // Values and errors both come back.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
    let s = call_stack_vm::jit::stats();
    assert_eq!(s.declined, 0, "{s:?} {:?}", call_stack_vm::jit::last_decline());
}
