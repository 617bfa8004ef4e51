//! A VM as a Rust tutorial writes it, with hints only added: `OpCode`s with
//! their operands inline, a `Value` enum that is `Clone` (not `Copy`) with a
//! `Display`, globals in a `HashMap<String, Value>`, frames in a `Vec` whose
//! top holds the function and the instruction pointer (both promoted),
//! helpers returning `Result<_, VmError>` used with `?`, `&self` methods of
//! the value (`is_falsy`), and output kept as a `Vec<String>` of lines.
//! Before, a case compiled for it declined at the output's `push`, and
//! execute mode then panicked in the program. Results and whole final
//! states (result, stack, frames, globals, output) are compared with
//! `jit::plain`; random programs too.

use jitgen::prelude::*;

#[jit_interpreter]
mod vm {
    use jitgen::prelude::*;
    use std::collections::HashMap;
    use std::fmt;

    /// The instructions, with their operands inline.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum OpCode {
        Const(usize),
        Add,
        Sub,
        Less,
        GetLocal(usize),
        GetGlobal(usize),
        SetGlobal(usize),
        Jump(usize),
        JumpIfFalse(usize),
        Call(usize),
        Return,
        Print,
        Pop,
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Nil,
        Bool(bool),
        Number(f64),
        Function(usize),
    }

    impl fmt::Display for Value {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            match self {
                Value::Nil => write!(f, "nil"),
                Value::Bool(b) => write!(f, "{}", b),
                Value::Number(n) => write!(f, "{}", n),
                Value::Function(i) => write!(f, "<fn {}>", i),
            }
        }
    }

    impl Value {
        fn is_falsy(&self) -> bool {
            matches!(self, Value::Nil | Value::Bool(false))
        }
    }

    pub struct Function {
        pub arity: usize,
        pub code: Vec<OpCode>,
        pub constants: Vec<Value>,
    }

    #[derive(Debug, PartialEq)]
    pub struct Frame {
        function: usize,
        ip: usize,
        slots: usize,
    }

    #[derive(Debug, PartialEq)]
    pub enum VmError {
        StackUnderflow,
        TypeError(String),
        UndefinedGlobal(String),
    }

    pub struct Vm {
        functions: Vec<Function>,
        pub stack: Vec<Value>,
        pub frames: Vec<Frame>,
        pub globals: HashMap<String, Value>,
        names: Vec<String>,
        pub output: Vec<String>,
    }

    impl Vm {
        pub fn new(functions: Vec<Function>, names: Vec<String>) -> Self {
            Vm { functions, stack: Vec::new(), frames: Vec::new(), globals: HashMap::new(), names, output: Vec::new() }
        }

        fn pop(&mut self) -> Result<Value, VmError> {
            self.stack.pop().ok_or(VmError::StackUnderflow)
        }

        fn peek(&self, d: usize) -> &Value {
            &self.stack[self.stack.len() - 1 - d]
        }

        fn binary(&mut self, op: OpCode) -> Result<(), VmError> {
            let b = self.pop()?;
            let a = self.pop()?;
            let r = match (a, b, op) {
                (Value::Number(a), Value::Number(b), OpCode::Add) => Value::Number(a + b),
                (Value::Number(a), Value::Number(b), OpCode::Sub) => Value::Number(a - b),
                (Value::Number(a), Value::Number(b), OpCode::Less) => Value::Bool(a < b),
                _ => return Err(VmError::TypeError(format!("bad operands for {:?}", op))),
            };
            self.stack.push(r);
            Ok(())
        }

        pub fn run(&mut self) -> Result<Value, VmError> {
            self.frames.push(Frame { function: 0, ip: 0, slots: 0 });
            loop {
                hint!(global_merge_point);
                let frame = self.frames.last_mut().unwrap();
                let f = hint!(frame.function, promote);
                let ip = hint!(frame.ip, promote);
                frame.ip += 1;
                let op = self.functions[f].code[ip];
                match op {
                    OpCode::Const(i) => {
                        let v = self.functions[f].constants[i].clone();
                        self.stack.push(v);
                    }
                    OpCode::Add | OpCode::Sub | OpCode::Less => self.binary(op)?,
                    OpCode::GetLocal(i) => {
                        let base = self.frames.last().unwrap().slots;
                        let v = self.stack[base + i].clone();
                        self.stack.push(v);
                    }
                    OpCode::GetGlobal(i) => {
                        let name = &self.names[i];
                        match self.globals.get(name) {
                            Some(v) => self.stack.push(v.clone()),
                            None => return Err(VmError::UndefinedGlobal(name.clone())),
                        }
                    }
                    OpCode::SetGlobal(i) => {
                        let v = self.pop()?;
                        self.globals.insert(self.names[i].clone(), v);
                    }
                    OpCode::Jump(t) => self.frames.last_mut().unwrap().ip = t,
                    OpCode::JumpIfFalse(t) => {
                        if self.peek(0).is_falsy() {
                            self.frames.last_mut().unwrap().ip = t;
                        }
                        self.pop()?;
                    }
                    OpCode::Call(argc) => {
                        let callee = self.peek(argc).clone();
                        match callee {
                            Value::Function(fi) if self.functions[fi].arity == argc => {
                                let slots = self.stack.len() - argc - 1;
                                self.frames.push(Frame { function: fi, ip: 0, slots });
                            }
                            _ => return Err(VmError::TypeError("not callable".into())),
                        }
                    }
                    OpCode::Return => {
                        let result = self.pop()?;
                        let frame = self.frames.pop().unwrap();
                        if self.frames.is_empty() {
                            return Ok(result);
                        }
                        self.stack.truncate(frame.slots);
                        self.stack.push(result);
                    }
                    OpCode::Print => {
                        let v = self.pop()?;
                        self.output.push(format!("{}", v));
                    }
                    OpCode::Pop => {
                        self.pop()?;
                    }
                }
            }
        }
    }
}

use vm::{Function, OpCode::*, Value, Vm, VmError};

/// Recursive fib(n) through a global, printed.
fn fib(n: f64) -> (Vec<Function>, Vec<String>) {
    let main = Function {
        arity: 0,
        code: vec![Const(0), SetGlobal(0), GetGlobal(0), Const(1), Call(1), Print, Const(2), Return],
        constants: vec![Value::Function(1), Value::Number(n), Value::Nil],
    };
    let fib = Function {
        arity: 1,
        code: vec![
            GetLocal(1),
            Const(0),
            Less,
            JumpIfFalse(6),
            GetLocal(1),
            Return,
            GetGlobal(0),
            GetLocal(1),
            Const(1),
            Sub,
            Call(1),
            GetGlobal(0),
            GetLocal(1),
            Const(0),
            Sub,
            Call(1),
            Add,
            Return,
        ],
        constants: vec![Value::Number(2.0), Value::Number(1.0)],
    };
    (vec![main, fib], vec!["fib".to_string()])
}

type Outcome = (Result<Value, VmError>, Vec<Value>, Vec<vm::Frame>, Vec<(String, Value)>, Vec<String>);

/// The whole final state: the result, the stack, the frames, the globals
/// and the output (the functions and names are only read).
fn outcome(r: Result<Value, VmError>, vm: Vm) -> Outcome {
    let mut globals: Vec<(String, Value)> = vm.globals.into_iter().collect();
    globals.sort_by(|a, b| a.0.cmp(&b.0));
    (r, vm.stack, vm.frames, globals, vm.output)
}

fn check(program: impl Fn() -> (Vec<Function>, Vec<String>)) {
    let (f, names) = program();
    let mut plain = Vm::new(f, names);
    let want = vm::jit::plain::Vm::run(&mut plain);
    let want = outcome(want, plain);
    let (f, names) = program();
    let mut jit = Vm::new(f, names);
    let got = jit.run();
    assert_eq!(outcome(got, jit), want);
}

#[test]
fn a_tutorial_vm_compiles_and_agrees_with_plain() {
    vm::jit::config().set_threshold(0);
    check(|| fib(12.0));
    assert!(vm::jit::stats().compilations > 0, "{:?}", vm::jit::last_decline());
    assert_eq!(vm::jit::stats().declined, 0, "{:?}", vm::jit::last_decline());
    // A type error and an unknown global end the run with the error.
    check(|| {
        let main = Function {
            arity: 0,
            code: vec![Const(0), Const(1), Add, Print, Const(0), Return],
            constants: vec![Value::Nil, Value::Number(1.0)],
        };
        (vec![main], vec![])
    });
    check(|| {
        let main = Function { arity: 0, code: vec![GetGlobal(0), Return], constants: vec![] };
        (vec![main], vec!["x".to_string()])
    });
    // Machines built afresh, each with its functions in buffers of its own
    // (all kept alive): the functions' canonical copy, made by copying
    // each `Vec`, keys the code, so after the first run this thread
    // compiles nothing more.
    let (plain_fns, names) = fib(9.0);
    let mut plain = Vm::new(plain_fns, names);
    let want = outcome(vm::jit::plain::Vm::run(&mut plain), plain);
    let mut machines: Vec<Vm> = (0..4).map(|_| fib(9.0)).map(|(f, n)| Vm::new(f, n)).collect();
    let (mut compiled, mut results) = (vec![], vec![]);
    for m in machines.iter_mut() {
        results.push(m.run());
        compiled.push(vm::jit::portal_listings().len());
    }
    assert!(compiled.windows(2).all(|w| w[0] == w[1]), "{compiled:?}");
    for (m, r) in machines.into_iter().zip(results) {
        assert!(outcome(r, m) == want);
    }
}

/// Random straight programs over two globals, printing what they compute,
/// then a countdown loop around them.
#[test]
fn random_programs_of_the_tutorial_vm_agree_with_plain() {
    vm::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x707_0a1);
    for _ in 0..crate::common::how_many(60) {
        let mut body = vec![];
        for _ in 0..1 + rng.below(6) {
            let g = rng.below(2) as usize;
            match rng.below(5) {
                0 => body.extend([GetGlobal(g), Const(1), Add, SetGlobal(g)]),
                1 => body.extend([GetGlobal(g), Print]),
                2 => body.extend([GetGlobal(0), GetGlobal(1), Less, Print]),
                3 => body.extend([Const(2), SetGlobal(g)]),
                _ => body.extend([GetGlobal(g), GetGlobal(1 - g), Sub, SetGlobal(g)]),
            }
        }
        // counter = n; loop: body; counter = counter - 1; if 0 < counter goto loop
        let n = 1.0 + rng.below(12) as f64;
        let mut code = vec![Const(3), SetGlobal(2), Const(0), SetGlobal(0), Const(0), SetGlobal(1)];
        let top = code.len();
        code.extend(body);
        code.extend([GetGlobal(2), Const(1), Sub, SetGlobal(2), Const(0), GetGlobal(2), Less, JumpIfFalse(top + 100)]);
        code.push(Jump(top));
        let exit = code.len();
        code.extend([GetGlobal(0), Return]);
        for op in code.iter_mut() {
            if *op == JumpIfFalse(top + 100) {
                *op = JumpIfFalse(exit);
            }
        }
        let constants = vec![Value::Number(0.0), Value::Number(1.0), Value::Bool(rng.below(2) == 0), Value::Number(n)];
        let names = vec!["a".to_string(), "b".to_string(), "count".to_string()];
        check(|| (vec![Function { arity: 0, code: code.clone(), constants: constants.clone() }], names.clone()));
    }
    let s = vm::jit::stats();
    assert!(s.entries > 0 && s.flexswitch_cases > 0, "{s:?} {:?}", vm::jit::last_decline());
}
