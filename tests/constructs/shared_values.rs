//! A dynamic VM whose strings are shared, as many Rust VMs keep them: a
//! `Value` enum with a `Str(Rc<str>)` variant, globals in a
//! `HashMap<Rc<str>, Value>`, `Rc::clone(name)` for a key, `Rc::ptr_eq`
//! for identity, `format!("{x}{y}").into()` for a new string in a helper
//! taking `&Value`s, and `a == b` of the derived `PartialEq`. Before, any
//! `Rc` used by value left the whole module to Rust (it interpreted only).
//! Now compiled code owns an `Rc` as it owns a `String` (moved into its
//! arena, copied by its own `clone`), a call by a path of a type from
//! outside the module (`Rc::ptr_eq`) is one residual call, and a `&Value`
//! handed to Rust (an outlined statement, a helper left to Rust) is lent as
//! a view of its words. Whole final states (the result, the stack, the
//! globals, the output) are compared with `jit::plain`, through the portal
//! and `jit::specialize`, on fixed and random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod rc_values {
    use jitgen::prelude::*;
    use std::collections::HashMap;
    use std::fmt;
    use std::rc::Rc;

    #[derive(Debug, Clone, PartialEq)]
    pub enum Value {
        Nil,
        Int(i64),
        Bool(bool),
        Str(Rc<str>),
    }

    impl fmt::Display for Value {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            match self {
                Value::Nil => write!(f, "nil"),
                Value::Int(i) => write!(f, "{i}"),
                Value::Bool(b) => write!(f, "{b}"),
                Value::Str(s) => write!(f, "{s}"),
            }
        }
    }

    #[derive(Debug, Clone)]
    pub enum Op {
        Const(Value),
        Add,
        Eq,
        Len,
        Dup,
        /// Whether the two strings on top are one object.
        Same,
        Get(Rc<str>),
        Set(Rc<str>),
        /// Counts the top down and jumps back while it stays positive.
        Loop(usize),
        Print,
        Pop,
    }

    fn concat(a: &Value, b: &Value) -> Result<Value, String> {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) => Ok(Value::Int(x.wrapping_add(*y))),
            (Value::Str(x), Value::Str(y)) => Ok(Value::Str(format!("{x}{y}").into())),
            _ => Err(format!("cannot add {a} and {b}")),
        }
    }

    pub struct Vm {
        pub stack: Vec<Value>,
        pub globals: HashMap<Rc<str>, Value>,
        pub output: Vec<String>,
    }

    impl Vm {
        fn pop(&mut self) -> Result<Value, String> {
            self.stack.pop().ok_or_else(|| "underflow".to_string())
        }

        pub fn run(&mut self, code: &[Op], fuel: usize) -> Result<usize, String> {
            let mut ip = 0;
            let mut steps = 0;
            while ip < code.len() && steps < fuel {
                hint!(global_merge_point);
                steps += 1;
                let op = hint!(&code[ip], concrete);
                ip += 1;
                match op {
                    Op::Const(v) => self.stack.push(v.clone()),
                    Op::Add => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        let r = concat(&a, &b)?;
                        self.stack.push(r);
                    }
                    Op::Eq => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(Value::Bool(a == b));
                    }
                    Op::Len => {
                        let v = self.pop()?;
                        let n = match &v {
                            Value::Str(s) => s.len() as i64,
                            _ => -1,
                        };
                        self.stack.push(Value::Int(n));
                    }
                    Op::Dup => {
                        let v = self.stack.last().cloned().unwrap_or(Value::Nil);
                        self.stack.push(v);
                    }
                    Op::Same => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        let same = match (&a, &b) {
                            (Value::Str(x), Value::Str(y)) => Rc::ptr_eq(x, y),
                            _ => false,
                        };
                        self.stack.push(Value::Bool(same));
                    }
                    Op::Get(name) => match self.globals.get(name) {
                        Some(v) => self.stack.push(v.clone()),
                        None => return Err(format!("undefined '{name}'")),
                    },
                    Op::Set(name) => {
                        let v = self.pop()?;
                        self.globals.insert(Rc::clone(name), v);
                    }
                    Op::Loop(t) => {
                        if let Some(Value::Int(n)) = self.stack.pop() {
                            if n > 0 {
                                self.stack.push(Value::Int(n - 1));
                                ip = *t;
                            }
                        }
                    }
                    Op::Print => {
                        // Formatted twice: the first must not consume it.
                        let v = self.pop()?;
                        self.output.push(v.to_string());
                        self.output.push(format!("<{v}>"));
                    }
                    Op::Pop => {
                        if let Value::Str(s) = self.pop()? {
                            drop(s);
                        }
                    }
                }
            }
            Ok(steps)
        }
    }
}

use rc_values::{Op, Value, Vm};

type State = (Result<usize, String>, Vec<Value>, Vec<(String, Value)>, Vec<String>);

fn fresh() -> Vm {
    Vm { stack: vec![], globals: Default::default(), output: vec![] }
}

fn state(vm: &Vm, r: Result<usize, String>) -> State {
    let mut globals: Vec<_> = vm.globals.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    globals.sort_by(|a, b| a.0.cmp(&b.0));
    (r, vm.stack.clone(), globals, vm.output.clone())
}

/// Runs `code` plain, through the portal and through `jit::specialize`:
/// the three whole final states agree.
fn check(code: &[Op], fuel: usize) -> State {
    let mut plain = fresh();
    let r = rc_values::jit::plain::Vm::run(&mut plain, code, fuel);
    let want = state(&plain, r);
    let mut vm = fresh();
    let r = vm.run(code, fuel);
    assert_eq!(state(&vm, r), want, "portal: {code:?} {fuel}");
    let mut vm = fresh();
    let r = rc_values::jit::specialize::Vm::run(&mut vm, code, fuel);
    assert_eq!(state(&vm, r), want, "specialize: {code:?} {fuel}");
    want
}

fn text(s: &str) -> Value {
    Value::Str(s.into())
}

#[test]
fn values_holding_rc_strings_compile_and_agree_with_plain() {
    use Op::*;
    // Only the helper building a new string and `==` of two values run as
    // Rust; the module is not left to Rust.
    let left = rc_values::jit::left_to_rust();
    assert!(left.iter().all(|l| l.starts_with("concat") || l.contains("(outlined)")), "{left:?}");
    let name = |s: &str| -> std::rc::Rc<str> { s.into() };
    // s = "a"; n = 30; loop: s = s + "b" (read back from the map); then
    // identity and equality of strings, and an error.
    let code = vec![
        Const(text("a")),
        Set(name("s")),
        Const(Value::Int(30)),
        Get(name("s")),
        Const(text("b")),
        Add,
        Dup,
        Len,
        Pop,
        Set(name("s")),
        Loop(3),
        Get(name("s")),
        Print,
        Get(name("s")),
        Get(name("s")),
        Same,
        Print,
        Const(text("x")),
        Const(text("x")),
        Eq,
        Print,
        Const(Value::Int(1)),
        Const(text("x")),
        Add,
    ];
    rc_values::jit::config().set_threshold(0);
    let (r, _, globals, output) = check(&code, 10_000);
    assert_eq!(r, Err("cannot add 1 and x".to_string()));
    let s = format!("a{}", "b".repeat(31));
    assert_eq!(output, [s.as_str(), &format!("<{s}>"), "true", "<true>", "true", "<true>"]);
    assert_eq!(globals.len(), 1);
    for fuel in [3, 9, 40] {
        let _ = check(&code, fuel);
    }
    let s = rc_values::jit::stats();
    assert!(s.compilations > 0 && s.entries > 0 && s.declined == 0, "{s:?} {:?}", rc_values::jit::last_decline());
}

#[test]
fn random_programs_with_rc_strings_agree_with_plain() {
    use Op::*;
    let mut rng = crate::common::Rng(0x5_4a7ed);
    let names = ["x", "y"];
    for i in 0..crate::common::how_many(300) {
        rc_values::jit::config().set_threshold([0, 1, 3][i % 3]);
        let len = 1 + rng.below(12) as usize;
        let code: Vec<Op> = (0..len)
            .map(|_| match rng.below(14) {
                0 => Const(Value::Int(rng.below(5) as i64)),
                1 | 2 => Const(text(rng.pick(&["a", "b", ""]))),
                3 => Add,
                4 => Eq,
                5 => Len,
                6 => Dup,
                7 => Same,
                8 => Get(rng.pick(&names).into()),
                9 => Set(rng.pick(&names).into()),
                10 => Loop(rng.below(len as u64) as usize),
                11 => Print,
                12 => Const(Value::Nil),
                _ => Pop,
            })
            .collect();
        let _ = check(&code, 1 + rng.below(300) as usize);
    }
}
