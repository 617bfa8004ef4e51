//! A stack VM as a new user writes one, with its errors as text: a
//! `VmError` whose variants carry `&'static str` messages
//! (`VmError::TypeError("expected an int")`, `Halted { at, why }`), a helper
//! giving `Result<i64, &'static str>` whose error `map_err` wraps, `?`
//! everywhere, a `Value` enum printed by its `Display` (`v.to_string()`),
//! deriving `Default` (`stack.get(i).copied().unwrap_or_default()`), and
//! a method of `i64` called by its path (`i64::wrapping_add(a, b)`).
//! Before, a string literal anywhere in the module left it to Rust (it
//! interpreted only), and so did `to_string` on a module type. Now a literal
//! is a `&'static str` known while compiling, an enum payload of type `&str`
//! is two words (its address and length), and `to_string` is what
//! `format!("{}", v)` gives. Whole final states (the result, the stack, the frames, the
//! output) are compared with `jit::plain`, through the portal and
//! `jit::specialize`, on fixed and random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod text_errors {
    use jitgen::prelude::*;
    use std::fmt;

    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    pub enum Value {
        Int(i64),
        Bool(bool),
        #[default]
        Nil,
    }

    impl fmt::Display for Value {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            match self {
                Value::Int(i) => write!(f, "{i}"),
                Value::Bool(b) => write!(f, "{b}"),
                Value::Nil => write!(f, "nil"),
            }
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Instr {
        Push(i64),
        True,
        Nil,
        Add,
        Sub,
        Lt,
        Load(usize),
        Store(usize),
        /// Pushes the value `k` below the top, or nil.
        Peek(usize),
        Jmp(usize),
        Jz(usize),
        Call(usize, usize),
        Ret,
        Print,
        Halt,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum VmError {
        TypeError(&'static str),
        StackUnderflow,
        Halted { at: usize, why: &'static str },
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Frame {
        pub ret_pc: usize,
        pub base: usize,
    }

    pub struct Vm {
        code: Vec<Instr>,
        pub stack: Vec<Value>,
        pub frames: Vec<Frame>,
        pub output: Vec<String>,
    }

    fn small(n: i64) -> Result<i64, &'static str> {
        if n > 1_000_000 || n < -1_000_000 {
            Err("out of range")
        } else {
            Ok(n)
        }
    }

    impl Vm {
        pub fn new(code: Vec<Instr>) -> Self {
            Vm { code, stack: Vec::new(), frames: Vec::new(), output: Vec::new() }
        }

        fn pop(&mut self) -> Result<Value, VmError> {
            self.stack.pop().ok_or(VmError::StackUnderflow)
        }

        fn pop_int(&mut self) -> Result<i64, VmError> {
            match self.pop()? {
                Value::Int(i) => Ok(i),
                Value::Bool(_) => Err(VmError::TypeError("expected an int, got a bool")),
                Value::Nil => Err(VmError::TypeError("expected an int, got nil")),
            }
        }

        /// Runs from the first instruction for at most `fuel` steps.
        pub fn run(&mut self, fuel: usize) -> Result<Value, VmError> {
            let mut pc = 0;
            let mut steps = 0;
            self.frames.push(Frame { ret_pc: usize::MAX, base: 0 });
            while pc < self.code.len() {
                hint!(global_merge_point);
                if steps == fuel {
                    return Err(VmError::Halted { at: pc, why: "out of fuel" });
                }
                steps += 1;
                let instr = hint!(self.code[pc], concrete);
                pc += 1;
                match instr {
                    Instr::Push(n) => self.stack.push(Value::Int(n)),
                    Instr::True => self.stack.push(Value::Bool(true)),
                    Instr::Nil => self.stack.push(Value::Nil),
                    Instr::Add => {
                        let b = self.pop_int()?;
                        let a = self.pop_int()?;
                        let n = small(i64::wrapping_add(a, b)).map_err(VmError::TypeError)?;
                        self.stack.push(Value::Int(n));
                    }
                    Instr::Sub => {
                        let b = self.pop_int()?;
                        let a = self.pop_int()?;
                        let n = small(a.wrapping_sub(b)).map_err(|why| VmError::Halted { at: pc, why })?;
                        self.stack.push(Value::Int(n));
                    }
                    Instr::Lt => {
                        let b = self.pop_int()?;
                        let a = self.pop_int()?;
                        self.stack.push(Value::Bool(a < b));
                    }
                    Instr::Load(i) => {
                        let base = self.frames.last().unwrap().base;
                        if base + i >= self.stack.len() {
                            return Err(VmError::Halted { at: pc, why: "a local past the stack" });
                        }
                        let v = self.stack[base + i];
                        self.stack.push(v);
                    }
                    Instr::Store(i) => {
                        let v = self.pop()?;
                        let base = self.frames.last().unwrap().base;
                        if base + i >= self.stack.len() {
                            return Err(VmError::Halted { at: pc, why: "a local past the stack" });
                        }
                        self.stack[base + i] = v;
                    }
                    Instr::Peek(k) => {
                        let at = self.stack.len().wrapping_sub(1 + k);
                        let v = self.stack.get(at).copied().unwrap_or_default();
                        self.stack.push(v);
                    }
                    Instr::Jmp(t) => pc = t,
                    Instr::Jz(t) => match self.pop()? {
                        Value::Bool(false) | Value::Int(0) | Value::Nil => pc = t,
                        _ => {}
                    },
                    Instr::Call(target, argc) => {
                        if argc > self.stack.len() {
                            return Err(VmError::Halted { at: pc, why: "too few arguments" });
                        }
                        if self.frames.len() == 64 {
                            return Err(VmError::TypeError("stack overflow"));
                        }
                        let base = self.stack.len() - argc;
                        self.frames.push(Frame { ret_pc: pc, base });
                        pc = target;
                    }
                    Instr::Ret => {
                        let result = self.pop()?;
                        let frame = self.frames.pop().unwrap();
                        if self.frames.is_empty() {
                            return Ok(result);
                        }
                        self.stack.truncate(frame.base);
                        self.stack.push(result);
                        pc = hint!(frame.ret_pc, promote);
                    }
                    Instr::Print => {
                        let v = self.pop()?;
                        self.output.push(v.to_string());
                    }
                    Instr::Halt => return Ok(self.stack.pop().unwrap_or(Value::Nil)),
                }
            }
            Err(VmError::Halted { at: pc, why: "ran off the end" })
        }
    }
}

use text_errors::{Instr, Value, Vm, VmError};

/// The whole final state of a run: the result, the stack, the frames and
/// the output.
type State = (Result<Value, VmError>, Vec<Value>, Vec<text_errors::Frame>, Vec<String>);

fn state(vm: &Vm, r: Result<Value, VmError>) -> State {
    (r, vm.stack.clone(), vm.frames.clone(), vm.output.clone())
}

fn check(code: &[Instr], fuel: usize) -> State {
    let mut plain = Vm::new(code.to_vec());
    let r = text_errors::jit::plain::Vm::run(&mut plain, fuel);
    let want = state(&plain, r);
    let mut vm = Vm::new(code.to_vec());
    let r = vm.run(fuel);
    assert_eq!(state(&vm, r), want, "{code:?} {fuel}");
    let mut vm = Vm::new(code.to_vec());
    let r = text_errors::jit::specialize::Vm::run(&mut vm, fuel);
    assert_eq!(state(&vm, r), want, "{code:?} {fuel}");
    want
}

/// `print fib(n)`, recursively, then `Halt`.
fn fib(n: i64) -> Vec<Instr> {
    use Instr::*;
    vec![
        Push(n),
        Call(4, 1),
        Print,
        Halt,
        Load(0),
        Push(2),
        Lt,
        Jz(10),
        Load(0),
        Ret,
        Load(0),
        Push(1),
        Sub,
        Call(4, 1),
        Load(0),
        Push(2),
        Sub,
        Call(4, 1),
        Add,
        Ret,
    ]
}

#[test]
fn static_str_errors_and_display_compile_and_agree_with_plain() {
    // Nothing runs as Rust: `to_string` is `format!("{}", v)`, and
    // `unwrap_or_default` on an enum deriving `Default` its `#[default]`
    // variant.
    assert!(text_errors::jit::left_to_rust().is_empty(), "{:?}", text_errors::jit::left_to_rust());
    text_errors::jit::config().set_threshold(0);
    let (r, _, _, out) = check(&fib(15), 1_000_000);
    assert_eq!((r, out), (Ok(Value::Nil), vec!["610".to_string()]));
    assert!(text_errors::jit::stats().entries > 0, "{:?}", text_errors::jit::last_decline());
    // Each error, with its message.
    use Instr::*;
    let cases: Vec<(Vec<Instr>, VmError)> = vec![
        (vec![True, Push(1), Add], VmError::TypeError("expected an int, got a bool")),
        (vec![Push(1), Nil, Add], VmError::TypeError("expected an int, got nil")),
        (vec![Push(999_999), Push(2), Add], VmError::TypeError("out of range")),
        (vec![Push(-999_999), Push(2), Sub], VmError::Halted { at: 3, why: "out of range" }),
        (vec![Add], VmError::StackUnderflow),
        (vec![Push(1), Print], VmError::Halted { at: 2, why: "ran off the end" }),
        (vec![Jmp(0)], VmError::Halted { at: 0, why: "out of fuel" }),
        (vec![Call(0, 0)], VmError::TypeError("stack overflow")),
        (vec![Load(3)], VmError::Halted { at: 1, why: "a local past the stack" }),
    ];
    for t in [0, 1, 3] {
        text_errors::jit::config().set_threshold(t);
        for (code, e) in &cases {
            for _ in 0..3 {
                assert_eq!(check(code, 500).0, Err(*e), "{code:?}");
            }
        }
    }
}

#[test]
fn random_programs_with_text_errors_agree_with_plain() {
    let mut rng = crate::common::Rng(0x57a7_1c7e);
    for i in 0..crate::common::how_many(300) {
        text_errors::jit::config().set_threshold([0, 1, 2, 5][i % 4]);
        let len = 1 + rng.below(16) as usize;
        let to = |rng: &mut crate::common::Rng| rng.below(len as u64 + 1) as usize;
        let code: Vec<Instr> = (0..len)
            .map(|_| match rng.below(16) {
                0 | 1 => Instr::Push(rng.below(7) as i64 - 2),
                2 => Instr::True,
                3 => Instr::Nil,
                4 => Instr::Add,
                5 => Instr::Sub,
                6 => Instr::Lt,
                7 => Instr::Load(rng.below(3) as usize),
                8 => Instr::Store(rng.below(3) as usize),
                9 => Instr::Jmp(to(&mut rng)),
                10 => Instr::Jz(to(&mut rng)),
                11 => Instr::Call(to(&mut rng), rng.below(3) as usize),
                12 => Instr::Ret,
                13 => Instr::Print,
                14 => Instr::Peek(rng.below(4) as usize),
                _ => Instr::Halt,
            })
            .collect();
        let _ = check(&code, 1 + rng.below(600) as usize);
    }
}

/// Values owning strings, as a new user's dynamic VM holds them: printed
/// by their `Display` (`v.to_string()`, before an error that left the module
/// to Rust), cloned out of a map of globals (`globals.get(&name)`, then
/// `v.clone()`), and popped into a local `Vec` (a call's arguments): compiled
/// code declined those two before. A name matched as text (`let name =
/// name.as_str(); match name { "x" => .. }`) runs as Rust, its `&str` as
/// written (the outlined function took a `&String`, which rustc refused).
#[jit_interpreter]
mod owned_values {
    use jitgen::prelude::*;
    use std::collections::HashMap;
    use std::fmt;

    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Num(i64),
        Str(String),
        Nil,
    }

    impl fmt::Display for Value {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Value::Num(n) => write!(f, "{n}"),
                Value::Str(s) => write!(f, "'{s}'"),
                Value::Nil => write!(f, "nil"),
            }
        }
    }

    #[derive(Debug, Clone)]
    pub enum Op {
        Const(Value),
        Add,
        Get(String),
        Set(String),
        /// Counts the top down and jumps back while it stays positive.
        Loop(usize),
        Print,
        /// Pops `n` values into a `Vec` and prints them in order.
        Join(usize),
        /// Pushes 1 for the name `x`, 2 for `y`, else nil.
        Which(String),
    }

    pub struct Interp {
        ops: Vec<Op>,
        pub stack: Vec<Value>,
        pub globals: HashMap<String, Value>,
        pub lines: Vec<String>,
    }

    impl Interp {
        pub fn new(ops: Vec<Op>) -> Self {
            Interp { ops, stack: vec![], globals: HashMap::new(), lines: vec![] }
        }

        fn pop(&mut self) -> Result<Value, String> {
            let Some(v) = self.stack.pop() else {
                return Err("the stack is empty".to_string());
            };
            Ok(v)
        }

        pub fn run(&mut self, fuel: usize) -> Result<usize, String> {
            let mut ip = 0;
            let mut steps = 0;
            while ip < self.ops.len() && steps < fuel {
                hint!(global_merge_point);
                steps += 1;
                let op = hint!(self.ops[ip].clone(), concrete);
                ip += 1;
                match op {
                    Op::Const(v) => self.stack.push(v),
                    Op::Add => {
                        let b = self.stack.pop().unwrap_or(Value::Nil);
                        let a = self.stack.pop().unwrap_or(Value::Nil);
                        let r = match (a, b) {
                            (Value::Num(x), Value::Num(y)) => Value::Num(x.wrapping_add(y)),
                            (Value::Str(x), Value::Str(y)) => Value::Str(x + &y),
                            (x, y) => return Err(format!("cannot add {x} and {y}")),
                        };
                        self.stack.push(r);
                    }
                    Op::Get(name) => match self.globals.get(&name) {
                        Some(v) => self.stack.push(v.clone()),
                        None => return Err(format!("undefined '{name}'")),
                    },
                    Op::Set(name) => {
                        let v = self.stack.last().cloned().unwrap_or(Value::Nil);
                        self.globals.insert(name, v);
                    }
                    Op::Loop(t) => {
                        if let Some(Value::Num(n)) = self.stack.pop() {
                            if n > 0 {
                                self.stack.push(Value::Num(n - 1));
                                ip = t;
                            }
                        }
                    }
                    Op::Print => {
                        let v = self.stack.pop().unwrap_or(Value::Nil);
                        self.lines.push(v.to_string());
                    }
                    Op::Which(name) => {
                        let name = name.as_str();
                        let v = match name {
                            "x" => Value::Num(1),
                            "y" => Value::Num(2),
                            _ => Value::Nil,
                        };
                        self.stack.push(v);
                    }
                    Op::Join(n) => {
                        let mut args = Vec::new();
                        for _ in 0..n {
                            args.push(self.pop()?);
                        }
                        args.reverse();
                        let shown: Vec<String> = args.iter().map(|a| a.to_string()).collect();
                        self.lines.push(shown.join(" "));
                    }
                }
            }
            Ok(steps)
        }
    }
}

type OwnedState = (Result<usize, String>, Vec<owned_values::Value>, Vec<(String, owned_values::Value)>, Vec<String>);

fn check_owned(ops: &[owned_values::Op], fuel: usize) {
    let state = |vm: &owned_values::Interp, r| {
        let mut globals: Vec<_> = vm.globals.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        globals.sort_by(|a, b| a.0.cmp(&b.0));
        (r, vm.stack.clone(), globals, vm.lines.clone())
    };
    let mut plain = owned_values::Interp::new(ops.to_vec());
    let r = owned_values::jit::plain::Interp::run(&mut plain, fuel);
    let want: OwnedState = state(&plain, r);
    let mut vm = owned_values::Interp::new(ops.to_vec());
    let r = vm.run(fuel);
    assert_eq!(state(&vm, r), want, "{ops:?} {fuel}");
    let mut vm = owned_values::Interp::new(ops.to_vec());
    let r = owned_values::jit::specialize::Interp::run(&mut vm, fuel);
    assert_eq!(state(&vm, r), want, "{ops:?} {fuel}");
}

#[test]
fn values_owning_strings_print_by_display_and_clone_out_of_a_map() {
    use owned_values::{Op::*, Value::*};
    // Only the arguments' formatting and joining runs as Rust.
    let left = owned_values::jit::left_to_rust();
    assert!(left.iter().all(|l| l.contains("(outlined)") && l.contains("Interp::run")), "{left:?}");
    // s = "a"; n = 30; loop: s = s + "b" (read back from the map); print s, n.
    let ops = vec![
        Const(Str("a".into())),
        Set("s".into()),
        Const(Num(30)),
        Get("s".into()),
        Const(Str("b".into())),
        Add,
        Set("s".into()),
        Add,
        Loop(3),
        Get("s".into()),
        Print,
        Get("s".into()),
        Which("y".into()),
        Join(3),
        Get("t".into()),
    ];
    owned_values::jit::config().set_threshold(0);
    for fuel in [3, 9, 40, 10_000] {
        check_owned(&ops, fuel);
    }
    let s = owned_values::jit::stats();
    assert!(s.entries > 0 && s.declined == 0, "{s:?} {:?}", owned_values::jit::last_decline());
    let mut rng = crate::common::Rng(0x0_5717_6e);
    for i in 0..crate::common::how_many(300) {
        owned_values::jit::config().set_threshold([0, 1, 3][i % 3]);
        let len = 1 + rng.below(10) as usize;
        let names = ["x", "y"];
        let ops: Vec<owned_values::Op> = (0..len)
            .map(|_| match rng.below(10) {
                0 => Const(Num(rng.below(5) as i64)),
                1 => Const(Str(rng.pick(&names).to_string())),
                2 => Add,
                3 => Get(rng.pick(&names).to_string()),
                4 => Set(rng.pick(&names).to_string()),
                5 => Loop(rng.below(len as u64) as usize),
                6 => Const(Nil),
                7 => Join(rng.below(4) as usize),
                8 => Which(rng.pick(&["x", "y", "z"]).to_string()),
                _ => Print,
            })
            .collect();
        check_owned(&ops, 1 + rng.below(300) as usize);
    }
}

/// An error borrowing text for a lifetime of its enum (`Named(&'a str)`),
/// not `'static`: its values cannot be rebuilt from words as a literal's
/// can, so the payload stays an object the analysis does not model and the
/// module interprets (before, generated code named the lifetime where it
/// is not declared, and rustc refused it).
#[jit_interpreter]
mod borrowed_text {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Error<'a> {
        Named(&'a str),
        Plain,
    }

    pub fn run<'a>(code: &[u8], name: &'a str, n: i64) -> Result<i64, Error<'a>> {
        let mut pc = 0;
        let mut acc = n;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => acc += 1,
                1 => return Err(Error::Named(name)),
                2 => return Err(Error::Named("fixed")),
                _ => return Err(Error::Plain),
            }
        }
        Ok(acc)
    }
}

#[test]
fn an_error_borrowing_text_for_its_enums_lifetime_interprets_and_agrees() {
    borrowed_text::jit::config().set_threshold(0);
    let name = String::from("dyn");
    for code in [&[0u8, 0, 1][..], &[0, 2], &[0, 3], &[0, 0]] {
        assert_eq!(borrowed_text::run(code, &name, 1), borrowed_text::jit::plain::run(code, &name, 1), "{code:?}");
    }
    assert!(borrowed_text::jit::left_to_rust().iter().all(|l| l.starts_with("the module")));
}
