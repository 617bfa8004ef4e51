//! A VM as a new user writes one: instructions with `String` operands
//! (`Load("x")`), variables in a `HashMap<String, i64>`, a `Display` impl,
//! errors as `String`s made by `format!` inside a helper method reading
//! `self` (which once kept `self` whole: the split did not look into
//! `format!`, so nothing was green and nothing compiled), `?` on
//! `ok_or`/`ok_or_else`, output as `Vec<String>`, and the program counter
//! promoted. Results and whole final states are compared with `jit::plain`,
//! through the portal and through `jit::specialize`, on random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod vm {
    use jitgen::prelude::*;
    use std::collections::HashMap;
    use std::fmt;

    #[derive(Debug, Clone, PartialEq)]
    pub enum Instr {
        Push(i64),
        Load(String),
        Store(String),
        Add,
        Sub,
        Lt,
        JmpIfZero(usize),
        Jmp(usize),
        Print,
        Halt,
    }

    impl fmt::Display for Instr {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Instr::Push(n) => write!(f, "push {n}"),
                Instr::Load(s) => write!(f, "load {s}"),
                Instr::Store(s) => write!(f, "store {s}"),
                other => write!(f, "{other:?}"),
            }
        }
    }

    pub struct Vm {
        pub code: Vec<Instr>,
        pub pc: usize,
        pub stack: Vec<i64>,
        pub vars: HashMap<String, i64>,
        pub output: Vec<String>,
    }

    impl Vm {
        pub fn new(code: Vec<Instr>) -> Vm {
            Vm { code, pc: 0, stack: Vec::new(), vars: HashMap::new(), output: Vec::new() }
        }

        fn pop(&mut self) -> Result<i64, String> {
            self.stack.pop().ok_or_else(|| format!("stack underflow at {}", self.pc))
        }

        pub fn run(&mut self) -> Result<i64, String> {
            loop {
                hint!(global_merge_point);
                let pc = hint!(self.pc, promote);
                let instr = self.code.get(pc).cloned().ok_or("pc out of range")?;
                self.pc += 1;
                match instr {
                    Instr::Push(n) => self.stack.push(n),
                    Instr::Load(name) => {
                        let v = *self.vars.get(&name).ok_or_else(|| format!("unknown variable {name}"))?;
                        self.stack.push(v);
                    }
                    Instr::Store(name) => {
                        let v = self.pop()?;
                        self.vars.insert(name, v);
                    }
                    Instr::Add => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a + b);
                    }
                    Instr::Sub => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a - b);
                    }
                    Instr::Lt => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push((a < b) as i64);
                    }
                    Instr::JmpIfZero(t) => {
                        if self.pop()? == 0 {
                            self.pc = t;
                        }
                    }
                    Instr::Jmp(t) => self.pc = t,
                    Instr::Print => {
                        let v = *self.stack.last().ok_or("empty")?;
                        self.output.push(v.to_string());
                    }
                    Instr::Halt => return self.pop(),
                }
            }
        }
    }
}

use vm::{jit, Instr, Instr::*, Vm};

/// `n` turns of a loop whose body is `body`, counting `i` down from `n`.
fn program(n: i64, body: &[Instr]) -> Vec<Instr> {
    let mut code = vec![Push(0), Store("s".into()), Push(0), Store("t".into()), Push(n), Store("i".into())];
    let top = code.len();
    code.extend([Load("i".into()), JmpIfZero(0)]);
    code.extend(body.iter().cloned());
    code.extend([Load("i".into()), Push(1), Sub, Store("i".into()), Jmp(top)]);
    let end = code.len();
    code[top + 1] = JmpIfZero(end);
    code.extend([Load("s".into()), Load("t".into()), Add, Print, Halt]);
    code
}

fn state(vm: Vm) -> (usize, Vec<i64>, Vec<(String, i64)>, Vec<String>) {
    let mut vars: Vec<(String, i64)> = vm.vars.into_iter().collect();
    vars.sort();
    (vm.pc, vm.stack, vars, vm.output)
}

fn check(code: Vec<Instr>) {
    let mut plain = Vm::new(code.clone());
    let want = jit::plain::Vm::run(&mut plain);
    let want_state = state(plain);
    let mut vm = Vm::new(code.clone());
    assert_eq!(vm.run(), want, "{code:?}");
    assert_eq!(state(vm), want_state, "{code:?}");
    let mut vm = Vm::new(code.clone());
    assert_eq!(jit::specialize::Vm::run(&mut vm), want, "{code:?}");
    assert_eq!(state(vm), want_state, "{code:?}");
}

#[test]
fn a_vm_with_string_operands_and_errors_made_by_format_compiles_and_agrees_with_plain() {
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
    let body = [Load("s".into()), Load("i".into()), Add, Store("s".into())];
    for n in [0, 1, 7, 200] {
        check(program(n, &body));
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
    // An error made by `format!` from `self`, and one from a literal.
    check(vec![Add]);
    check(vec![Load("nope".into())]);
    check(vec![Jmp(9)]);
    assert_eq!(Instr::Load("x".into()).to_string(), "load x");
}

#[test]
fn random_programs_with_string_operands_agree_with_plain() {
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    let mut rng = crate::common::Rng(0x57_41);
    let vars = ["s", "t", "u"];
    for _ in 0..crate::common::how_many(150) {
        let mut body = vec![];
        for _ in 0..rng.below(8) {
            let v = vars[rng.below(3) as usize].to_string();
            body.push(match rng.below(7) {
                0 => Push(rng.below(9) as i64 - 4),
                1 => Load(v),
                2 => Store(v),
                3 => Add,
                4 => Sub,
                5 => Lt,
                _ => Print,
            });
        }
        check(program(rng.below(30) as i64, &body));
    }
}
