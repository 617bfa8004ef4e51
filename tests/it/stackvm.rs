//! The tutorial stack VM (interpreters/stackvm): written as a Rust
//! programmer writes one, annotated with hints only. Its portal is the
//! method `Vm::run`; every result and error is compared with `jit::plain`,
//! through the portal and through `jit::specialize`.

use crate::common;

use jitgen::prelude::*;
use stackvm_interp::programs::{
    counted_loop, deep_recursion, nested_loops, printing, procedure_in_a_loop, recursive_fib,
};
use stackvm_interp::vm::{jit, Instruction, Instruction::*, Vm, VmError};

fn plain(code: &[Instruction]) -> Result<i64, VmError> {
    jit::plain::Vm::run(&mut Vm::new(code.to_vec()))
}

fn portal(code: &[Instruction]) -> Result<i64, VmError> {
    Vm::new(code.to_vec()).run()
}

fn specialized(code: &[Instruction]) -> Result<i64, VmError> {
    jit::specialize::Vm::run(&mut Vm::new(code.to_vec()))
}

/// One way to run the machine: `jit::plain`, the portal or `jit::specialize`.
type Way = fn(&mut Vm) -> Result<i64, VmError>;
const PLAIN: Way = jit::plain::Vm::run;
const PORTAL: Way = Vm::run;
const SPECIALIZED: Way = jit::specialize::Vm::run;

/// The result and the machine left behind (see [`common::whole`]).
fn whole(code: &[Instruction], way: Way) -> (Result<i64, VmError>, String) {
    common::whole(Vm::new(code.to_vec()), way)
}

#[test]
fn the_tutorial_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let programs: Vec<(&str, Vec<Instruction>, i64)> = vec![
        ("counted loop", counted_loop(100), 5050),
        ("nested loops", nested_loops(7, 9), 28 * 45),
        ("procedure in a loop", procedure_in_a_loop(10), 385),
    ];
    for (name, code, want) in &programs {
        assert_eq!(plain(code), Ok(*want), "{name}");
        assert_eq!(portal(code), Ok(*want), "{name} (portal)");
        assert_eq!(specialized(code), Ok(*want), "{name} (specialized)");
    }
    for code in [vec![Pop], vec![Ret], vec![Load(3), Halt], vec![Push(1), Jump(7)], vec![Call(0, 2)]] {
        assert_eq!(portal(&code), plain(&code), "{code:?}");
        assert_eq!(specialized(&code), plain(&code), "{code:?}");
    }
    // `pc` and `code` are fields of `self`, green at the merge point: the
    // loops compiled and ran.
    assert!(jit::stats().entries > 0, "{:?} {:?}", jit::stats(), jit::last_decline());
}

/// `Print` is `println!` in `Vm::run`: compiled code prints what the
/// interpreter prints, in the same order. Each way runs in a child process
/// (this test binary again) whose output is compared.
#[test]
fn printing_gives_the_interpreters_output_in_order() {
    if let Ok(mode) = std::env::var("STACKVM_PRINT_CHILD") {
        jit::config().set_threshold(0);
        println!();
        let code = printing(6);
        let r = match mode.as_str() {
            "plain" => plain(&code),
            "portal" => portal(&code),
            _ => specialized(&code),
        };
        println!("\nresult {r:?}");
        return;
    }
    let run = |mode: &str| -> Vec<String> {
        let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                &common::test_path("printing_gives_the_interpreters_output_in_order"),
                "--nocapture",
                "--test-threads=1",
            ])
            .env("STACKVM_PRINT_CHILD", mode)
            .output()
            .expect("the child runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.parse::<i64>().is_ok() || l.starts_with("result"))
            .map(str::to_string)
            .collect()
    };
    let want = run("plain");
    let expected: Vec<String> = (1..=6)
        .rev()
        .flat_map(|i: i64| [i.to_string(), (i + 1).to_string()])
        .chain(["result Ok(0)".to_string()])
        .collect();
    assert_eq!(want, expected);
    assert_eq!(run("portal"), want);
    assert_eq!(run("specialized"), want);
}

/// A random program: main code whose jumps go forward, then procedures of
/// straight-line code ending in `Ret`, called from the main code. Stack
/// underflows, bad locals and stray returns are errors both ways.
fn random_program(rng: &mut common::Rng) -> Vec<Instruction> {
    let main_len = 1 + rng.below(24) as usize;
    let nprocs = rng.below(3) as usize;
    let mut procs: Vec<Vec<Instruction>> = vec![];
    for _ in 0..nprocs {
        let n = rng.below(5) as usize;
        let mut p: Vec<Instruction> = (0..n).map(|_| straight(rng)).collect();
        p.push(Ret);
        procs.push(p);
    }
    let mut starts = vec![];
    let mut at = main_len + 1;
    for p in &procs {
        starts.push(at);
        at += p.len();
    }
    let mut code = vec![];
    for pc in 0..main_len {
        let forward = pc + 1 + rng.below((main_len - pc) as u64) as usize;
        code.push(match rng.below(12) {
            0 => Jump(forward),
            1 | 2 => JumpIfZero(forward),
            3 if !starts.is_empty() => Call(starts[rng.below(starts.len() as u64) as usize], rng.below(3) as usize),
            4 => Push(rng.below(7) as i64 - 3),
            _ => straight(rng),
        });
    }
    code.push(Halt);
    for p in procs {
        code.extend(p);
    }
    code
}

fn straight(rng: &mut common::Rng) -> Instruction {
    match rng.below(13) {
        0 | 1 => Push(rng.below(9) as i64 - 4),
        2 => Pop,
        3 => Dup,
        4 => Swap,
        5 => Add,
        6 => Sub,
        7 => Mul,
        8 => Lt,
        9 => Inc,
        10 => Load(rng.below(4) as usize),
        11 => Store(rng.below(4) as usize),
        _ => Push(1),
    }
}

#[test]
fn random_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = common::Rng(0x5eed_2305);
    for _ in 0..common::how_many(300) {
        let code = random_program(&mut rng);
        let want = whole(&code, PLAIN);
        assert_eq!(whole(&code, PORTAL), want, "{code:?}");
        assert_eq!(whole(&code, SPECIALIZED), want, "{code:?}");
    }
}

/// A term for `summing_loop`: pushes one value computed from the counter
/// (local 0), constants, and `square` (a procedure at `at`).
fn term(rng: &mut common::Rng, depth: u32, at: usize, out: &mut Vec<Instruction>) {
    match rng.below(if depth > 2 { 3 } else { 7 }) {
        0 => out.push(Load(0)),
        1 => out.push(Push(rng.below(7) as i64 - 3)),
        2 => {
            out.push(Load(0));
            out.push(Call(at, 1));
        }
        3 | 4 => {
            term(rng, depth + 1, at, out);
            term(rng, depth + 1, at, out);
            out.push([Add, Sub, Mul, Lt][rng.below(4) as usize].clone());
        }
        5 => {
            term(rng, depth + 1, at, out);
            out.push(Inc);
        }
        _ => {
            term(rng, depth + 1, at, out);
            out.push(Dup);
            out.push(Print);
            out.push(Pop);
        }
    }
}

/// Random loops: `sum += term(i)` for i = n..1, with random terms (calls of
/// a procedure, printing), through the portal and `jit::specialize` against
/// plain.
#[test]
fn random_loops_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = common::Rng(0x5eed_2307);
    for _ in 0..common::how_many(100) {
        // The procedure's address depends on the term's length: build the
        // term with a placeholder, then once more with the right address.
        let seed = rng.next();
        let mut first = vec![];
        term(&mut common::Rng(seed), 0, 0, &mut first);
        let mut body = vec![];
        term(&mut common::Rng(seed), 0, 14 + first.len(), &mut body);
        let n = rng.below(20) as i64;
        let code = stackvm_interp::programs::summing_loop(n, &body, &[Load(0), Load(0), Mul, Ret]);
        let want = whole(&code, PLAIN);
        assert_eq!(whole(&code, PORTAL), want, "{code:?}");
        assert_eq!(whole(&code, SPECIALIZED), want, "{code:?}");
    }
}

/// A machine of the same shape with its state in view: `self`'s fields are
/// split into the portal's state (see `jitgen-macros`' `split`), so every
/// run compares the machine left behind as well as the result.
#[jit_interpreter]
mod observable {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Op {
        Push(i64),
        Add,
        Dec,
        Dup,
        Drop,
        Jnz(usize),
        Call(usize),
        Ret,
        Halt,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Frame {
        pub ret: usize,
        pub depth: usize,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Error {
        Underflow,
        NoFrame,
        BadPc,
        OutOfFuel,
    }

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct Machine {
        pub code: Vec<Op>,
        pub pc: usize,
        pub fuel: u64,
        pub stack: Vec<i64>,
        pub frames: Vec<Frame>,
    }

    impl Machine {
        fn pop(&mut self) -> Result<i64, Error> {
            self.stack.pop().ok_or(Error::Underflow)
        }

        fn jump(&mut self, target: usize) {
            self.pc = target;
        }

        /// With `?` and an early `return`, as a tutorial's step methods have.
        fn add(&mut self) -> Result<(), Error> {
            let b = self.pop()?;
            let a = self.pop()?;
            if b == 0 {
                self.stack.push(a);
                return Ok(());
            }
            self.stack.push(a.wrapping_add(b));
            Ok(())
        }

        fn ret(&mut self) -> Result<(), Error> {
            let f = self.frames.pop().ok_or(Error::NoFrame)?;
            self.pc = hint!(f.ret, promote);
            Ok(())
        }

        fn below_top(&self, n: usize) -> Option<i64> {
            let len = self.stack.len();
            if n < len {
                self.stack.get(len - 1 - n).copied()
            } else {
                None
            }
        }

        pub fn run(&mut self) -> Result<i64, Error> {
            loop {
                hint!(global_merge_point);
                let op = match self.code.get(hint!(self.pc, concrete)) {
                    Some(op) => *op,
                    None => return Err(Error::BadPc),
                };
                if self.fuel == 0 {
                    return Err(Error::OutOfFuel);
                }
                self.fuel -= 1;
                self.pc += 1;
                match op {
                    Op::Push(v) => self.stack.push(v),
                    Op::Add => self.add()?,
                    Op::Dec => {
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_sub(1));
                    }
                    Op::Dup => {
                        let a = self.below_top(0).ok_or(Error::Underflow)?;
                        self.stack.push(a);
                    }
                    Op::Drop => {
                        self.pop()?;
                    }
                    Op::Jnz(t) => {
                        if self.pop()? != 0 {
                            self.jump(t);
                        }
                    }
                    Op::Call(t) => {
                        self.frames.push(Frame { ret: self.pc, depth: self.stack.len() });
                        self.pc = t;
                    }
                    Op::Ret => self.ret()?,
                    Op::Halt => return self.pop(),
                }
            }
        }
    }
}

/// A random program: a counted loop whose body pushes, adds, drops and
/// calls procedures; procedures that return, halt, fail or call again.
fn observable_program(rng: &mut common::Rng) -> Vec<observable::Op> {
    use observable::Op::*;
    let nprocs = 1 + rng.below(3) as usize;
    let body_len = 1 + rng.below(6) as usize;
    // 0: Push(n); 1: loop head .. body .. Dec; Dup; Jnz(1); Halt; procedures.
    let procs_at = 1 + body_len + 4;
    let proc_len = 4;
    let op = |rng: &mut common::Rng, in_proc: bool| -> observable::Op {
        match rng.below(if in_proc { 10 } else { 8 }) {
            0 | 1 => Push(rng.below(5) as i64),
            2 => Add,
            3 => Drop,
            4 => Dup,
            5 | 6 => Call(procs_at + proc_len * rng.below(nprocs as u64) as usize),
            7 => Push(1),
            8 => Halt,
            _ => Ret,
        }
    };
    let mut code = vec![Push(1 + rng.below(12) as i64)];
    for _ in 0..body_len {
        code.push(op(rng, false));
    }
    code.extend([Dec, Dup, Jnz(1), Halt]);
    for _ in 0..nprocs {
        for _ in 0..proc_len - 1 {
            code.push(op(rng, true));
        }
        code.push(Ret);
    }
    code
}

fn observable_runs(code: &[observable::Op], fuel: u64) {
    let fresh = || observable::Machine { code: code.to_vec(), fuel, ..Default::default() };
    let mut want_m = fresh();
    let want = observable::jit::plain::Machine::run(&mut want_m);
    let mut m = fresh();
    assert_eq!((m.run(), &m), (want, &want_m), "portal {code:?}");
    let mut m = fresh();
    assert_eq!((observable::jit::specialize::Machine::run(&mut m), &m), (want, &want_m), "specialized {code:?}");
}

/// Results, errors and the machine left behind (pc, fuel, operand stack,
/// saved frames) agree with plain, on random programs with calls, halts and
/// errors inside procedures, and fuel running out.
#[test]
fn split_self_leaves_the_machine_as_plain_does() {
    observable::jit::config().set_threshold(0);
    let mut rng = common::Rng(0x0b5e_7ab1e);
    for _ in 0..common::how_many(300) {
        let code = observable_program(&mut rng);
        for fuel in [0, 7, 400] {
            observable_runs(&code, fuel);
        }
    }
    let st = observable::jit::stats();
    assert!(st.entries > 0, "{st:?} {:?}", observable::jit::last_decline());
}

/// The fields of `self` live in registers in a compiled loop: the counted
/// loop makes no calls and touches no memory, through inlined methods with
/// `?` and `return` as well.
#[test]
fn split_self_fields_live_in_registers_in_compiled_loops() {
    use observable::Op::*;
    observable::jit::config().set_threshold(0);
    // `Add` goes through `self.add()?`, with its early `return`.
    let code = vec![Push(1000), Push(2), Drop, Push(0), Add, Push(2), Add, Dec, Dec, Dec, Dup, Jnz(1), Halt];
    observable_runs(&code, 1 << 20);
    common::assert_loops_in_registers(&observable::jit::portal_listings());
}

/// A register machine as a new user writes one: the fetch and its hint in a
/// `step` method with `?` and `return`, called from the portal method.
#[jit_interpreter]
pub mod regvm {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Instr {
        LoadImm { reg: usize, value: i64 },
        Add { dst: usize, a: usize, b: usize },
        SubImm { reg: usize, value: i64 },
        JumpIfNonZero { reg: usize, target: usize },
        Call { target: usize },
        Return,
        Halt,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum VmError {
        BadRegister(usize),
        CallStackEmpty,
        PcOutOfBounds,
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct Machine {
        pub program: Vec<Instr>,
        pub ip: usize,
        pub registers: Vec<i64>,
        pub call_stack: Vec<usize>,
        pub steps: u64,
    }

    impl Machine {
        pub fn new(program: Vec<Instr>) -> Machine {
            Machine { program, ip: 0, registers: vec![0; 8], call_stack: Vec::new(), steps: 0 }
        }

        fn reg(&self, r: usize) -> Result<i64, VmError> {
            self.registers.get(r).copied().ok_or(VmError::BadRegister(r))
        }

        fn set_reg(&mut self, r: usize, v: i64) -> Result<(), VmError> {
            match self.registers.get_mut(r) {
                Some(slot) => {
                    *slot = v;
                    Ok(())
                }
                None => Err(VmError::BadRegister(r)),
            }
        }

        fn step(&mut self) -> Result<bool, VmError> {
            let instr = *self.program.get(hint!(self.ip, concrete)).ok_or(VmError::PcOutOfBounds)?;
            self.ip += 1;
            self.steps += 1;
            match instr {
                Instr::LoadImm { reg, value } => self.set_reg(reg, value)?,
                Instr::Add { dst, a, b } => {
                    let v = self.reg(a)?.wrapping_add(self.reg(b)?);
                    self.set_reg(dst, v)?;
                }
                Instr::SubImm { reg, value } => {
                    let v = self.reg(reg)? - value;
                    self.set_reg(reg, v)?;
                }
                Instr::JumpIfNonZero { reg, target } => {
                    if self.reg(reg)? != 0 {
                        self.ip = target;
                    }
                }
                Instr::Call { target } => {
                    self.call_stack.push(self.ip);
                    self.ip = target;
                }
                Instr::Return => {
                    let ret = self.call_stack.pop().ok_or(VmError::CallStackEmpty)?;
                    self.ip = hint!(ret, promote);
                }
                Instr::Halt => return Ok(false),
            }
            Ok(true)
        }

        pub fn run(&mut self) -> Result<i64, VmError> {
            loop {
                hint!(global_merge_point);
                if !self.step()? {
                    break;
                }
            }
            self.reg(0)
        }
    }
}

/// The register machine: results, errors and the machine left behind agree
/// with plain; its counted loop (a call per turn) compiles to a loop
/// without calls or memory.
#[test]
fn a_step_method_with_the_fetch_compiles() {
    use regvm::{Instr::*, Machine};
    regvm::jit::config().set_threshold(0);
    let counted = |n: i64, bad: usize| {
        vec![
            LoadImm { reg: 0, value: 0 },
            LoadImm { reg: 1, value: n },
            Call { target: 6 },
            SubImm { reg: 1, value: 1 },
            JumpIfNonZero { reg: 1, target: 2 },
            Halt,
            Add { dst: 0, a: 0, b: bad },
            Return,
        ]
    };
    for (n, bad) in [(100, 1), (3, 9), (1, 1), (50, 7)] {
        let code = counted(n, bad);
        let mut want_m = Machine::new(code.clone());
        let want = regvm::jit::plain::Machine::run(&mut want_m);
        let mut m = Machine::new(code.clone());
        assert_eq!((m.run(), &m), (want, &want_m), "{code:?}");
        let mut m = Machine::new(code.clone());
        assert_eq!((regvm::jit::specialize::Machine::run(&mut m), &m), (want, &want_m), "{code:?}");
    }
    for code in [vec![Return], vec![LoadImm { reg: 8, value: 1 }], vec![Call { target: 5 }]] {
        let mut want_m = Machine::new(code.clone());
        let want = regvm::jit::plain::Machine::run(&mut want_m);
        let mut m = Machine::new(code.clone());
        assert_eq!((m.run(), &m), (want, &want_m), "{code:?}");
    }
    common::assert_loops_in_registers(&regvm::jit::portal_listings());
}

/// A dynamically typed machine as a new user writes one: `Vec<Value>` fields
/// of an enum with payloads, a `while` loop over the program, `match &ops[ip]`.
#[jit_interpreter]
pub mod dynvm {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Value {
        Int(i64),
        Bool(bool),
        Nil,
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Op {
        Const(Value),
        Add,
        Lt,
        Not,
        Load(usize),
        Store(usize),
        JumpIfFalse(usize),
        Jump(usize),
        Halt,
    }

    #[derive(Debug, Clone, PartialEq)]
    pub enum Error {
        TypeError,
        Underflow,
        BadLocal(usize),
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct Interp {
        pub ops: Vec<Op>,
        pub ip: usize,
        pub stack: Vec<Value>,
        pub locals: Vec<Value>,
    }

    impl Interp {
        pub fn new(ops: Vec<Op>) -> Self {
            Interp { ops, ip: 0, stack: Vec::with_capacity(16), locals: vec![Value::Nil; 4] }
        }

        fn pop(&mut self) -> Result<Value, Error> {
            self.stack.pop().ok_or(Error::Underflow)
        }

        fn pop_int(&mut self) -> Result<i64, Error> {
            match self.pop()? {
                Value::Int(i) => Ok(i),
                _ => Err(Error::TypeError),
            }
        }

        pub fn run(&mut self) -> Result<Value, Error> {
            while self.ip < self.ops.len() {
                hint!(global_merge_point);
                let ip = hint!(self.ip, concrete);
                self.ip += 1;
                match &self.ops[ip] {
                    Op::Const(v) => self.stack.push(*v),
                    Op::Add => {
                        let b = self.pop_int()?;
                        let a = self.pop_int()?;
                        self.stack.push(Value::Int(a + b));
                    }
                    Op::Lt => {
                        let b = self.pop_int()?;
                        let a = self.pop_int()?;
                        self.stack.push(Value::Bool(a < b));
                    }
                    Op::Not => match self.pop()? {
                        Value::Bool(b) => self.stack.push(Value::Bool(!b)),
                        _ => return Err(Error::TypeError),
                    },
                    Op::Load(i) => {
                        let v = *self.locals.get(*i).ok_or(Error::BadLocal(*i))?;
                        self.stack.push(v);
                    }
                    Op::Store(i) => {
                        let v = self.pop()?;
                        match self.locals.get_mut(*i) {
                            Some(slot) => *slot = v,
                            None => return Err(Error::BadLocal(*i)),
                        }
                    }
                    Op::JumpIfFalse(t) => {
                        if let Value::Bool(false) = self.pop()? {
                            self.ip = *t;
                        }
                    }
                    Op::Jump(t) => self.ip = *t,
                    Op::Halt => break,
                }
            }
            self.pop()
        }
    }
}

/// The dynamically typed machine: results, type errors raised in the loop
/// and the machine left behind (operand stack, locals) agree with plain; the
/// counted loop compiles to a loop without calls or memory.
#[test]
fn a_machine_of_enum_values_in_vec_fields_compiles() {
    use dynvm::{Interp, Op::*, Value::*};
    dynvm::jit::config().set_threshold(0);
    let counted = |n: i64, step: dynvm::Value| {
        vec![
            Const(Int(0)),
            Store(0),
            Const(Int(0)),
            Store(1),
            Load(0),
            Const(Int(n)),
            Lt,
            JumpIfFalse(17),
            Load(1),
            Load(0),
            Add,
            Store(1),
            Load(0),
            Const(step),
            Add,
            Store(0),
            Jump(4),
            Load(1),
            Halt,
        ]
    };
    let mut programs = vec![];
    for n in [0, 1, 7, 300] {
        programs.push(counted(n, Int(1)));
        programs.push(counted(n, Bool(true)));
        programs.push(counted(n, Nil));
    }
    programs.push(vec![Const(Int(1)), Not]);
    programs.push(vec![Const(Bool(false)), Not, Store(9)]);
    programs.push(vec![Const(Int(4)), Const(Int(5)), Store(2), Jump(7)]);
    for code in programs {
        let mut want_m = Interp::new(code.clone());
        let want = dynvm::jit::plain::Interp::run(&mut want_m);
        let mut m = Interp::new(code.clone());
        assert_eq!((m.run(), &m), (want.clone(), &want_m), "{code:?}");
        let mut m = Interp::new(code.clone());
        assert_eq!((dynvm::jit::specialize::Interp::run(&mut m), &m), (want, &want_m), "{code:?}");
    }
    // A program at the address of an earlier one replaces its code: look at
    // the code of one program, run last.
    let mut m = Interp::new(counted(300, Int(1)));
    assert_eq!(m.run(), Ok(Int(44850)));
    common::assert_loops_in_registers(&dynvm::jit::portal_listings());
}

/// Recursion of the interpreted program: fibonacci, a recursion
/// 10^5 frames deep (the VM's frames are a `Vec`, on the heap), and an error
/// raised at its bottom, through the portal and `jit::specialize`. The VM
/// reads its current frame in place (`frames.last()` at every `Load`), and
/// its recursion compiles all the same: the saved frames are spilled onto
/// the continuation stack, and nothing declines.
#[test]
fn recursion_agrees_with_plain() {
    jit::config().set_threshold(0);
    let spills = jit::stats().spills;
    for n in 0..=if common::deep() { 20 } else { 14 } {
        let code = recursive_fib(n);
        let want = plain(&code);
        assert_eq!(portal(&code), want, "fib({n})");
        assert_eq!(specialized(&code), want, "fib({n}), specialized");
    }
    assert_eq!(portal(&recursive_fib(20)), Ok(6765));
    assert!(jit::stats().spills > spills, "{:?}", jit::stats());
    // (A recursion on constants, with no run-time branch, unrolls until its
    // frames fill a virtual list, then declines in a portal and spills in
    // `jit::specialize`; no decline is about spilling.)
    let why = jit::last_decline().unwrap_or_default();
    assert!(!why.contains("spilled") && !why.contains("not empty"), "{why}");
    for (n, bottom) in [(0, 0), (10, 0), (100_000, 0), (100_000, 5), (3, 1)] {
        let code = deep_recursion(n, bottom);
        let want = plain(&code);
        assert_eq!(portal(&code), want, "down({n}), local {bottom} at the bottom");
        assert_eq!(specialized(&code), want, "down({n}), local {bottom} at the bottom, specialized");
    }
    assert_eq!(plain(&deep_recursion(100_000, 0)), Ok(5_000_050_000));
    assert_eq!(plain(&deep_recursion(100_000, 5)), Err(VmError::BadLocal));
}

/// Random procedures that call each other (and themselves) on `depth - 1`
/// while `depth > 0`, with instruction pairs between the calls that change
/// only the running value on top (so that the depth stays below and every
/// program ends), one of them a `Load` that fails where the frame is too
/// short: an error raised as deep as the recursion goes.
fn random_recursive_program(rng: &mut common::Rng) -> Vec<Instruction> {
    let nprocs = 1 + rng.below(3) as usize;
    // Procedures' bodies first, with calls to procedure numbers; then
    // their addresses, once all lengths are known.
    let mut bodies: Vec<Vec<(Instruction, Option<usize>)>> = vec![];
    for _ in 0..nprocs {
        let mut b = vec![];
        let calls = rng.below(3);
        b.push((Push(rng.below(9) as i64), None));
        for _ in 0..calls {
            b.extend([(Load(0), None), (Push(1), None), (Sub, None)]);
            b.push((Call(0, 1), Some(rng.below(nprocs as u64) as usize)));
            b.push((Add, None));
            if rng.below(3) == 0 {
                let first = match rng.below(3) {
                    0 => Load(rng.below(4) as usize),
                    _ => Push(rng.below(9) as i64 - 4),
                };
                b.push((first, None));
                b.push(([Add, Sub, Mul, Lt][rng.below(4) as usize].clone(), None));
            }
        }
        b.push((Ret, None));
        bodies.push(b);
    }
    // Each procedure: `Load(0), JumpIfZero(base)`, its body, then the base
    // case `Push(c), Ret`.
    let mut starts = vec![];
    let mut at = 3;
    for b in &bodies {
        starts.push(at);
        at += 2 + b.len() + 2;
    }
    let mut code = vec![Push(rng.below(9) as i64), Call(starts[0], 1), Halt];
    for (k, b) in bodies.iter().enumerate() {
        let base = starts[k] + 2 + b.len();
        code.extend([Load(0), JumpIfZero(base)]);
        for (ins, callee) in b {
            code.push(match callee {
                Some(j) => Call(starts[*j], 1),
                None => ins.clone(),
            });
        }
        code.extend([Push(rng.below(5) as i64), Ret]);
    }
    code
}

#[test]
fn random_recursive_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = common::Rng(0x5eed_0024);
    let (mut calls, mut failed) = (0, 0);
    let n = common::how_many(300);
    for _ in 0..n {
        let code = random_recursive_program(&mut rng);
        let want = whole(&code, PLAIN);
        calls += code.iter().filter(|i| matches!(i, Call(..))).count();
        failed += want.0.is_err() as u32;
        assert_eq!(whole(&code, PORTAL), want, "{code:?}");
        assert_eq!(whole(&code, SPECIALIZED), want, "{code:?}");
    }
    assert!(calls > n && failed > 0, "{calls} calls, {failed} failed");
}

/// Random recursive programs run a few times each with a small threshold,
/// so that code is compiled and entered inside their recursions (the
/// interpreter's saved frames in memory below it) and goes on in compiled
/// code after returning below its entry (a child process: the threshold is
/// the module's).
#[test]
fn random_recursions_entered_with_saved_frames_agree_with_plain() {
    assert!(common::run_child("child_random_recursions_entered_with_saved_frames", Some("3")));
}

#[test]
#[ignore = "run by random_recursions_entered_with_saved_frames_agree_with_plain in a child process"]
fn child_random_recursions_entered_with_saved_frames() {
    // Fused as soon as code gained cases: the fused code is what is tested.
    jit::config().set_fusion_patience(0);
    let mut rng = common::Rng(0x5eed_0025);
    let entries = jit::stats().entries;
    for _ in 0..common::how_many(100) {
        let code = random_recursive_program(&mut rng);
        let want = whole(&code, PLAIN);
        for _ in 0..3 {
            assert_eq!(whole(&code, PORTAL), want, "{code:?}");
        }
    }
    for n in if common::deep() { [15, 18] } else { [12, 15] } {
        let code = recursive_fib(n);
        for _ in 0..3 {
            assert_eq!(whole(&code, PORTAL), whole(&code, PLAIN), "fib({n})");
        }
    }
    // Base cases that pop their callers' values below their own frames
    // (one, or that and the caller's local): the caller's frame, restored
    // after the return, is not where the stack's length usually puts it.
    for (depth, pops) in [(1, 2), (2, 3), (40, 2), (40, 3), (300, 2)] {
        let mut code = vec![Push(depth), Call(3, 1), Halt];
        code.extend([Load(0), JumpIfZero(12), Load(0), Load(0), Push(1), Sub, Call(3, 1), Add, Ret]);
        code.extend(vec![Pop; pops]);
        code.extend([Push(5), Ret]);
        let want = whole(&code, PLAIN);
        for _ in 0..5 {
            assert_eq!(whole(&code, PORTAL), want, "depth {depth}, {pops} pops");
        }
    }
    let s = jit::stats();
    // Code entered again had its pieces fused in (the runs after it ran
    // the fused code).
    assert!(s.entries > entries && s.spills > 0 && s.fusions > 0, "{s:?}");
    // A return below where code was entered goes on in compiled code: no
    // hand-over to the interpreter.
    assert_eq!(s.resumptions, 0, "{s:?}");
}

/// Random recursions whose returns hand over to the interpreter: with one
/// case per flexswitch, a return to a second return address continues in
/// execute mode from the switch's state, its operand stack's tail (what the
/// callee pushed, not stored yet) moved into the `Vec` the interpreter gets
/// back (a child process: the limit is the module's).
#[test]
fn random_recursions_handing_over_agree_with_plain() {
    assert!(common::run_child("child_random_recursions_handing_over", None));
}

#[test]
#[ignore = "run by random_recursions_handing_over_agree_with_plain in a child process"]
fn child_random_recursions_handing_over() {
    jit::config().set_threshold(0);
    jit::config().set_max_cases(1);
    let mut rng = common::Rng(0x5eed_0026);
    for _ in 0..common::how_many(100) {
        let code = random_recursive_program(&mut rng);
        let want = whole(&code, PLAIN);
        assert_eq!(whole(&code, PORTAL), want, "{code:?}");
        assert_eq!(whole(&code, SPECIALIZED), want, "{code:?}");
    }
    for n in [2, 7, if common::deep() { 15 } else { 11 }] {
        let code = recursive_fib(n);
        assert_eq!(whole(&code, PORTAL), whole(&code, PLAIN), "fib({n})");
        assert_eq!(whole(&code, SPECIALIZED), whole(&code, PLAIN), "fib({n}), specialized");
    }
    let s = jit::stats();
    assert!(s.resumptions > 0 && s.spills > 0, "{s:?}");
}

/// Random recursions whose flexswitch misses find the call's budget for
/// cases spent (empty here): each miss hands over as past `max_cases`, and
/// the call interprets (to its end: too short to earn the budget back); the
/// whole machine must be what plain leaves (a child process: the budget is
/// the module's).
#[test]
fn random_recursions_past_the_case_budget_agree_with_plain() {
    assert!(common::run_child("child_random_recursions_past_the_case_budget", None));
}

#[test]
#[ignore = "run by random_recursions_past_the_case_budget_agree_with_plain in a child process"]
fn child_random_recursions_past_the_case_budget() {
    jit::config().set_threshold(0);
    jit::config().set_case_budget(Some(std::time::Duration::ZERO));
    let mut rng = common::Rng(0x5eed_b0da);
    for _ in 0..common::how_many(100) {
        let code = random_recursive_program(&mut rng);
        let want = whole(&code, PLAIN);
        assert_eq!(whole(&code, PORTAL), want, "{code:?}");
        assert_eq!(whole(&code, SPECIALIZED), want, "{code:?}");
    }
    for n in [2, 7, 11] {
        let code = recursive_fib(n);
        assert_eq!(whole(&code, PORTAL), whole(&code, PLAIN), "fib({n})");
    }
    let s = jit::stats();
    assert!(s.cases_put_off > 0 && s.resumptions > 0, "{s:?}");
}

/// Recursive fibonacci run again and again on one machine in one thread at
/// the default threshold, as an embedder runs its program: its recursion
/// compiles (frames spilled, nothing declined); the run after the one that
/// compiled enters that code at the outermost call and compiles the paths
/// back to it (and fuses them in), and from then on each run enters the
/// code and compiles nothing more (a child process: the counts are the
/// module's; the run in which it compiles depends on the machine's speed,
/// through the warm-up). Before the VM's recursion compiled, code entered
/// with saved frames kept handing over and was retired, and each run
/// compiled anew. (A fresh machine per run puts the program in a new
/// buffer, at the last one's address only while nothing else allocated
/// between the runs: fusing does, and a new address compiles again.)
#[test]
fn a_recursion_compiled_once_serves_later_runs() {
    assert!(common::run_child("child_recursion_compiled_once", None));
}

#[test]
#[ignore = "run by a_recursion_compiled_once_serves_later_runs in a child process"]
fn child_recursion_compiled_once() {
    // No budget for cases: in this debug build a case takes milliseconds,
    // and the default budget would spread them over more runs than these
    // (the budget is held by `procvm::random_procedure_programs_past_the_case_budget_agree_with_plain`).
    jit::config().set_case_budget(None);
    let code = recursive_fib(22);
    let want = plain(&code);
    let mut vm = Vm::new(code.clone());
    let mut after = [jit::stats(); 12];
    for s in &mut after {
        vm.restart();
        assert_eq!(vm.run(), want);
        *s = jit::stats();
    }
    let compiled_in = after.iter().position(|s| s.compilations > 0);
    let settled = match compiled_in {
        Some(run) if run + 1 < after.len() - 1 => after[run + 1],
        _ => panic!("the recursion compiles in the first runs: {after:?} {:?}", jit::last_decline()),
    };
    let last = after[after.len() - 1];
    assert!(settled.spills > 0 && last.declined == 0, "{last:?} {:?}", jit::last_decline());
    assert_eq!(last.compilations, settled.compilations, "{after:?}");
    let runs_since = (after.len() - 2 - compiled_in.unwrap_or(0)) as u64;
    assert!(last.entries >= settled.entries + runs_since, "{after:?}");
}

/// Fusing compiles the tree's hot pieces again, so it waits until the code
/// has existed twice as long as compiling the tree would take: code entered again
/// in the first runs after it gained cases is not fused (it postpones),
/// code that keeps running is, once, and the fused code agrees with plain.
#[test]
fn fusion_waits_until_code_has_run_long_enough() {
    assert!(common::run_child("child_fusion_waits", Some("3")));
}

#[test]
#[ignore = "run by fusion_waits_until_code_has_run_long_enough in a child process"]
fn child_fusion_waits() {
    let code = recursive_fib(16);
    let want = plain(&code);
    let mut vm = Vm::new(code.clone());
    let run = |vm: &mut Vm| {
        vm.restart();
        assert_eq!(vm.run(), want);
    };
    for _ in 0..4 {
        run(&mut vm);
    }
    let early = jit::stats();
    assert!(early.compilations > 0 && early.flexswitch_cases > 0, "{early:?} {:?}", jit::last_decline());
    assert!(early.fusions == 0 && early.fusions_postponed > 0, "{early:?}");
    // Runs spread out in time: the code ages, and is fused once.
    let mut fused_at = None;
    for i in 0..400 {
        run(&mut vm);
        if jit::stats().fusions > 0 {
            fused_at = Some(i);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let fused = jit::stats();
    eprintln!("fused after {fused_at:?} more runs: {fused:?}");
    assert!(fused_at.is_some(), "{fused:?}");
    // The fused code runs from then on, as it stays.
    for _ in 0..20 {
        run(&mut vm);
    }
    let last = jit::stats();
    assert_eq!(
        (last.compilations, last.fusions, last.fusions_postponed),
        (fused.compilations, fused.fusions, fused.fusions_postponed),
        "{last:?}"
    );
    assert!(last.entries >= fused.entries + 20, "{last:?}");
}
