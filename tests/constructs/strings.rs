//! Interpreters that build and return a `String`: a free-function portal
//! returning the text it printed, and a method portal whose machine keeps
//! its output in a `String` field. Every result is compared with
//! `jit::plain`, through the portal and through `jit::specialize`.

use crate::common;

use jitgen::prelude::*;

#[jit_interpreter]
mod printer {
    use jitgen::prelude::*;
    use std::fmt::Write;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Op {
        Push(i64),
        Add,
        Dec,
        Dup,
        /// Jumps while the top of the stack is not zero.
        Jnz(usize),
        /// Pops and writes the value.
        Print,
        Char(u8),
        Say,
        Line,
        /// Pushes the output's length.
        Len,
        /// Empties the output when it is longer than this.
        ClearOver(usize),
        /// Pops and appends it formatted.
        Fmt,
        Halt,
    }

    /// Runs `code` on a stack holding `n` for at most `fuel` steps;
    /// returns what it printed.
    pub fn run(code: &[Op], n: i64, fuel: u64) -> String {
        let mut out = String::new();
        let mut stack: Vec<i64> = vec![n];
        let mut pc = 0;
        let mut fuel = fuel;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() || fuel == 0 {
                return out;
            }
            fuel -= 1;
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                Op::Push(v) => stack.push(v),
                Op::Add => {
                    let b = stack.pop().unwrap_or(0);
                    let a = stack.pop().unwrap_or(0);
                    stack.push(a.wrapping_add(b));
                }
                Op::Dec => {
                    let a = stack.pop().unwrap_or(0);
                    stack.push(a - 1);
                }
                Op::Dup => {
                    let a = stack.last().copied().unwrap_or(0);
                    stack.push(a);
                }
                Op::Jnz(t) => {
                    if stack.last().copied().unwrap_or(0) > 0 {
                        pc = t;
                    }
                }
                Op::Print => {
                    let v = stack.pop().unwrap_or(-1);
                    write!(out, "{} ", v).unwrap();
                }
                Op::Char(c) => out.push(c as char),
                Op::Say => out.push_str("{hi}"),
                Op::Line => out += "\n",
                Op::Len => stack.push(out.len() as i64),
                Op::ClearOver(k) => {
                    if out.len() > k && !out.is_empty() {
                        out.clear();
                    }
                }
                Op::Fmt => {
                    let v = stack.pop().unwrap_or(7);
                    out.push_str(&format!("<{v:>3}>"));
                    let s = v.to_string();
                    out += &s;
                    out.push_str(&(v - 1).to_string());
                    out.push_str(&"{;}".to_string());
                }
                Op::Halt => return out,
            }
        }
    }

    fn emit(out: &mut String, x: i64) {
        write!(out, "[{x}]").unwrap();
    }

    /// A machine with its output in a field, as a tutorial writes one.
    pub struct Machine {
        pub code: Vec<u8>,
        pub pc: usize,
        pub acc: i64,
        pub output: String,
    }

    impl Machine {
        /// Ops: 0 count down and write the count, 1 write a word, 2 count
        /// down and loop while positive, 3 empty the output, 4 write the
        /// count through a function, anything else stop. Returns a copy of
        /// the output, taking it when the count is even.
        pub fn run(&mut self) -> String {
            while self.pc < self.code.len() {
                hint!(global_merge_point);
                let op = self.code[hint!(self.pc, concrete)];
                self.pc += 1;
                match op {
                    0 => {
                        self.acc -= 1;
                        writeln!(self.output, "{}", self.acc).unwrap();
                    }
                    1 => self.output.push_str("tick "),
                    2 => {
                        self.acc -= 1;
                        if self.acc > 0 {
                            self.pc = 0;
                        }
                    }
                    3 => self.output = String::new(),
                    4 => emit(&mut self.output, self.acc),
                    _ => break,
                }
            }
            let mut copy = String::from("out: ");
            copy.push_str(self.output.as_str());
            if self.acc % 2 == 0 {
                copy.push_str(&std::mem::take(&mut self.output));
            }
            copy
        }
    }
}

use printer::Op;

const FUEL: u64 = 5_000;

/// A loop printing a countdown, its lines framed by the other operations.
fn countdown(n: i64) -> (Vec<Op>, i64) {
    let code = vec![Op::Say, Op::Dup, Op::Print, Op::Char(b'.'), Op::Dec, Op::Jnz(1), Op::Line, Op::Len, Op::Fmt];
    (code, n)
}

fn random_program(rng: &mut common::Rng) -> Vec<Op> {
    let mut code = vec![];
    let len = 1 + rng.below(12) as usize;
    for _ in 0..len {
        code.push(match rng.below(13) {
            0 => Op::Push(rng.below(9) as i64 - 3),
            1 => Op::Add,
            2 => Op::Dec,
            3 => Op::Dup,
            4 => Op::Print,
            5 => Op::Char(b"ab{}\xe9"[rng.below(5) as usize]),
            6 => Op::Say,
            7 => Op::Line,
            8 => Op::Len,
            9 => Op::ClearOver(rng.below(40) as usize),
            10 => Op::Fmt,
            11 => Op::Halt,
            _ => Op::Dec,
        });
    }
    // A loop back to the start that counts the first value down.
    code.push(Op::Dec);
    code.push(Op::Jnz(0));
    code
}

#[test]
fn a_portal_returning_a_string_compiles_and_agrees_with_plain() {
    printer::jit::config().set_threshold(0);
    printer::jit::config().set_turn_checks(1);
    for n in [0, 1, 5, 300] {
        let (code, n) = countdown(n);
        let want = printer::jit::plain::run(&code, n, FUEL);
        assert_eq!(printer::run(&code, n, FUEL), want);
        assert_eq!(printer::jit::specialize::run(&code).call(n, FUEL), want);
    }
    let (code, _) = countdown(0);
    // The string is one object residual code appends to: `push_str` of a
    // `format!` or a `to_string` writes without making the intermediate
    // string (the one `format!` is `let s = v.to_string()`).
    let listing = printer::jit::specialize::run(&code).listing().to_string();
    assert_eq!(listing.matches("call format!(").count(), 1, "{listing}");
    assert!(listing.matches("call write!(").count() >= 6, "{listing}");
    assert!(printer::run(&code, 3, FUEL).starts_with("{hi}3 .2 .1 .\n"), "{}", printer::run(&code, 3, FUEL));
    let st = printer::jit::stats();
    assert!(st.entries > 0 && st.declined == 0, "{st:?} {:?}", printer::jit::last_decline());
}

#[test]
fn random_string_programs_agree_with_plain() {
    printer::jit::config().set_threshold(0);
    printer::jit::config().set_turn_checks(1);
    let mut rng = common::Rng(0x5713);
    for _ in 0..common::how_many(150) {
        let code = random_program(&mut rng);
        let n = rng.below(30) as i64;
        let want = printer::jit::plain::run(&code, n, FUEL);
        assert_eq!(printer::run(&code, n, FUEL), want, "{code:?} {n}");
        assert_eq!(printer::jit::specialize::run(&code).call(n, FUEL), want, "{code:?} {n}");
    }
    let st = printer::jit::stats();
    assert!(st.entries > 0 && st.declined == 0, "{st:?} {:?}", printer::jit::last_decline());
}

fn machine(code: &[u8], acc: i64) -> printer::Machine {
    printer::Machine { code: code.to_vec(), pc: 0, acc, output: String::from("x") }
}

#[test]
fn a_method_portal_writing_into_a_string_field_agrees_with_plain() {
    printer::jit::config().set_threshold(0);
    printer::jit::config().set_turn_checks(1);
    let mut programs: Vec<(Vec<u8>, i64)> = vec![(vec![1, 0, 2, 5], 40), (vec![0, 1, 0, 2], 7), (vec![5], 1)];
    let mut rng = common::Rng(0x77);
    for _ in 0..common::how_many(150) {
        programs.push(((0..1 + rng.below(8)).map(|_| rng.below(6) as u8).collect(), rng.below(20) as i64));
    }
    for (code, acc) in programs.iter().map(|(c, a)| (&c[..], *a)) {
        let mut want_m = machine(code, acc);
        let want = printer::jit::plain::Machine::run(&mut want_m);
        if want_m.acc % 2 != 0 {
            // The output was left in the machine, and is what was copied.
            assert_eq!(want, format!("out: {}", want_m.output), "{code:?} {acc}");
        }
        let mut m = machine(code, acc);
        let got = (m.run(), &m.output, m.acc, m.pc);
        assert_eq!(got, (want.clone(), &want_m.output, want_m.acc, want_m.pc), "{code:?} {acc}");
        let mut m = machine(code, acc);
        let got = printer::jit::specialize::Machine::run(&mut m);
        assert_eq!((got, &m.output, m.acc), (want, &want_m.output, want_m.acc), "{code:?} {acc}");
    }
    let st = printer::jit::stats();
    assert!(st.entries > 0 && st.declined == 0, "{st:?} {:?}", printer::jit::last_decline());
}

/// Errors as `String`s, as many tutorials write them.
#[jit_interpreter]
mod errors {
    use jitgen::prelude::*;

    #[derive(Debug, PartialEq)]
    pub enum VmError {
        Negative(i64),
        Unknown { op: u8, why: String },
    }

    /// `run` with its errors as an enum of the module, one of them
    /// carrying the message.
    pub fn checked(code: &[u8], n: i64) -> Result<i64, VmError> {
        let first = hint!(code[0], concrete);
        match run(code, n, 2_000) {
            Ok(v) if v < 0 => Err(VmError::Negative(v)),
            Ok(v) => Ok(v),
            Err(why) => Err(VmError::Unknown { op: first, why }),
        }
    }

    /// A machine whose stack is a field: its portal method's `self` is
    /// split into its fields, and its `?` converts a `&str` error into the
    /// `String` the method returns, as Rust's `?` does.
    pub struct Machine {
        pub stack: Vec<i64>,
    }

    impl Machine {
        /// Ops: 0 pushes n, 1 adds the top two (failing when fewer), 2
        /// goes back to the second op while the top is below 50, 3
        /// duplicates the top, else returns the top.
        pub fn run(&mut self, code: &[u8], n: i64) -> Result<i64, String> {
            let mut pc = 0;
            loop {
                hint!(global_merge_point);
                let op = hint!(code[pc], concrete);
                pc += 1;
                match op {
                    0 => self.stack.push(n),
                    1 => {
                        let b = self.stack.pop().ok_or("stack underflow")?;
                        let a = self.stack.pop().ok_or("stack underflow")?;
                        self.stack.push(a + b);
                    }
                    2 => {
                        if self.stack.last().is_some_and(|t| *t < 50) {
                            pc = 1;
                        }
                    }
                    3 => {
                        if let Some(&t) = self.stack.last() {
                            self.stack.push(t);
                        }
                    }
                    _ => return self.stack.last().copied().ok_or(String::from("empty")),
                }
            }
        }
    }

    /// Ops: 0 add 3 and push, 1 subtract 1, 2 loop while positive, 3 fail
    /// when negative, 4 pop (failing when empty), anything else an error;
    /// an error too after `fuel` steps.
    pub fn run(code: &[u8], n: i64, fuel: u32) -> Result<i64, String> {
        let mut acc = n;
        let mut stack: Vec<i64> = Vec::new();
        let mut pc = 0;
        let mut fuel = fuel;
        while pc < code.len() {
            hint!(global_merge_point);
            if fuel == 0 {
                let mut e = String::from("out of fuel at ");
                e.push_str(&pc.to_string());
                return Err(e);
            }
            fuel -= 1;
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => {
                    acc += 3;
                    stack.push(acc);
                }
                1 => acc -= 1,
                4 => acc = stack.pop().ok_or("stack underflow")?,
                2 => {
                    if acc > 0 {
                        pc = 0;
                    }
                }
                3 => {
                    if acc < 0 {
                        return Err(format!("negative at {}: {acc}", pc - 1));
                    }
                }
                _ => return Err(String::from("unknown op")),
            }
        }
        Ok(acc)
    }
}

#[test]
fn string_errors_agree_with_plain() {
    errors::jit::config().set_threshold(0);
    errors::jit::config().set_turn_checks(1);
    let mut programs: Vec<(Vec<u8>, i64)> =
        vec![(vec![1, 3, 2], 10), (vec![1, 1, 3, 2], 9), (vec![0, 9], 1), (vec![1, 2], 1000), (vec![0, 2], 1)];
    let mut rng = common::Rng(0xe22);
    for _ in 0..common::how_many(150) {
        let code = (0..1 + rng.below(7)).map(|_| rng.below(6) as u8).collect();
        programs.push((code, rng.below(40) as i64 - 10));
    }
    for (code, n) in &programs {
        let want = errors::jit::plain::run(code, *n, 2_000);
        assert_eq!(errors::run(code, *n, 2_000), want, "{code:?} {n}");
        assert_eq!(errors::jit::specialize::run(code).call(*n, 2_000), want, "{code:?} {n}");
    }
    for (code, n) in &programs {
        let want = errors::jit::plain::checked(code, *n);
        assert_eq!(errors::checked(code, *n), want, "{code:?} {n}");
        assert_eq!(errors::jit::specialize::checked(code).call(*n), want, "{code:?} {n}");
    }
    assert_eq!(errors::run(&[0, 2], 1, 7), Err("out of fuel at 1".to_string()));
    for (code, n) in [(&[0u8, 3, 1, 2, 9][..], 3i64), (&[0, 1, 9], 1), (&[9], 2), (&[0, 0, 1, 3, 1, 2, 9], 7)] {
        let mut m = errors::Machine { stack: vec![] };
        let want = (errors::jit::plain::Machine::run(&mut m, code, n), m.stack);
        let mut m = errors::Machine { stack: vec![] };
        assert_eq!((m.run(code, n), m.stack), want, "{code:?} {n}");
        let mut m = errors::Machine { stack: vec![] };
        assert_eq!((errors::jit::specialize::Machine::run(&mut m, code, n), m.stack), want, "{code:?} {n}");
    }
    assert_eq!(errors::run(&[1, 2, 4], 3, 100), Err("stack underflow".to_string()));
    let st = errors::jit::stats();
    assert!(st.entries > 0 && st.declined == 0, "{st:?} {:?}", errors::jit::last_decline());
}

/// A portal returning its operand stack, a `Vec` of the module's enum.
#[jit_interpreter]
mod final_stack {
    use jitgen::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Value {
        Int(i64),
        Nil,
    }

    /// Ops: 0 push acc, 1 push nil, 2 decrement acc, 3 decrement and loop
    /// while positive, 4 drop, anything else stop.
    pub fn run(code: &[u8], n: i64) -> Vec<Value> {
        let mut stack = Vec::new();
        let mut acc = n;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => stack.push(Value::Int(acc)),
                1 => stack.push(Value::Nil),
                2 => acc -= 1,
                3 => {
                    acc -= 1;
                    if acc > 0 {
                        pc = 0;
                    }
                }
                4 => {
                    stack.pop();
                }
                _ => break,
            }
        }
        stack
    }
}

#[test]
fn a_portal_returning_a_vec_of_enums_agrees_with_plain() {
    final_stack::jit::config().set_threshold(0);
    final_stack::jit::config().set_turn_checks(1);
    let mut programs: Vec<(Vec<u8>, i64)> = vec![(vec![0, 2, 3], 50), (vec![0, 1, 2, 4, 3], 9), (vec![1, 9, 0], 3)];
    let mut rng = common::Rng(0x5ac);
    for _ in 0..common::how_many(100) {
        let code = (0..1 + rng.below(8)).map(|_| rng.below(6) as u8).collect();
        programs.push((code, rng.below(30) as i64));
    }
    for (code, n) in &programs {
        let want = final_stack::jit::plain::run(code, *n);
        assert_eq!(final_stack::run(code, *n), want, "{code:?} {n}");
        assert_eq!(final_stack::jit::specialize::run(code).call(*n), want, "{code:?} {n}");
    }
    assert_eq!(final_stack::run(&[0, 2, 3], 5).len(), 3);
    let st = final_stack::jit::stats();
    assert!(st.entries > 0 && st.declined == 0, "{st:?} {:?}", final_stack::jit::last_decline());
}

/// Strings inside structs: names in the program (green data) and a
/// message in a machine built by the portal.
#[jit_interpreter]
mod named {
    use jitgen::prelude::*;
    use std::fmt::Write;

    pub struct Proc {
        pub name: String,
        pub times: i64,
    }

    pub struct Log {
        pub text: String,
        pub lines: i64,
    }

    /// Runs the procedures in turn, each `times` times, logging their
    /// names; stops after `fuel` steps. Returns the log, its length last.
    pub fn run(procs: &[Proc], fuel: i64) -> String {
        let mut log = Log { text: String::new(), lines: 0 };
        let mut i = 0;
        let mut left = fuel;
        while i < procs.len() && left > 0 {
            hint!(global_merge_point);
            let p = hint!(&procs[i], concrete);
            let mut k = 0;
            while k < p.times {
                writeln!(log.text, "{} #{}", p.name, k).unwrap();
                log.lines += 1;
                k += 1;
            }
            if log.lines > 5 {
                log.text.push_str(&p.name);
            }
            left -= 1;
            i += 1;
            if i == procs.len() {
                i = 0;
            }
        }
        let n = log.text.len();
        write!(log.text, "{n}").unwrap();
        log.text
    }
}

#[test]
fn strings_in_structs_agree_with_plain() {
    named::jit::config().set_threshold(0);
    named::jit::config().set_turn_checks(1);
    let proc = |name: &str, times| named::Proc { name: name.to_string(), times };
    let mut programs = vec![vec![proc("main", 2), proc("{odd}", 0), proc("ünïcode", 3)]];
    let mut rng = common::Rng(0x9a3e);
    for _ in 0..common::how_many(40) {
        let procs = (0..1 + rng.below(4))
            .map(|_| proc(rng.pick(&["f", "", "{x}", "ßé", "main"]), rng.below(4) as i64))
            .collect();
        programs.push(procs);
    }
    for procs in &programs {
        for fuel in [0, 1, 4, 40] {
            let want = named::jit::plain::run(procs, fuel);
            assert_eq!(named::run(procs, fuel), want, "{fuel}");
            assert_eq!(named::jit::specialize::run(procs).call(fuel), want, "{fuel}");
        }
    }
    let st = named::jit::stats();
    assert!(st.entries > 0 && st.declined == 0, "{st:?} {:?}", named::jit::last_decline());
}

/// Strings reassigned, passed to functions of the module by value and by
/// `&mut`, and cloned.
#[jit_interpreter]
mod risky {
    use jitgen::prelude::*;
    use std::fmt::Write;

    fn emit(out: &mut String, x: i64) {
        write!(out, "[{x}]").unwrap();
    }

    fn framed(mut s: String, x: i64) -> String {
        s.push_str("<");
        s += &x.to_string();
        s
    }

    pub fn run(code: &[u8], n: i64) -> String {
        let mut out = String::new();
        let mut acc = n;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            match op {
                0 => acc -= 1,
                1 => out = format!("{}", acc),
                2 => {
                    acc -= 1;
                    if acc > 0 {
                        pc = 0;
                    }
                }
                3 => emit(&mut out, acc),
                4 => out = framed(out, acc),
                5 => {
                    let t = out.clone();
                    out.clear();
                    out.push_str(&t);
                    out.push_str(&t);
                    if out.len() > 50 {
                        out.clear();
                    }
                }
                _ => break,
            }
        }
        out
    }
}

#[test]
fn strings_reassigned_taken_and_passed_to_functions_agree_with_plain() {
    risky::jit::config().set_threshold(0);
    risky::jit::config().set_turn_checks(1);
    let mut rng = common::Rng(0x77);
    for _ in 0..common::how_many(300) {
        let code: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.below(7) as u8).collect();
        let n = rng.below(20) as i64;
        let want = risky::jit::plain::run(&code, n);
        assert_eq!(risky::run(&code, n), want, "{code:?} {n}");
        assert_eq!(risky::jit::specialize::run(&code).call(n), want, "{code:?} {n}");
    }
    let st = risky::jit::stats();
    assert!(st.entries > 0 && st.declined == 0, "{st:?} {:?}", risky::jit::last_decline());
}

thread_local! {
    static ARENA_PEAK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The most objects residual code has held in its arena at once in this
/// thread, as seen from inside the loop of `temporaries`.
fn note_arena() {
    let n = jitgen::__private::rt::heap::arena_len();
    ARENA_PEAK.with(|p| p.set(p.get().max(n)));
}

/// Temporary strings made at every turn of a loop.
#[jit_interpreter]
mod temporaries {
    use jitgen::prelude::*;

    /// Ops: 0 measure the counter written out, twice, 1 count down and
    /// loop while positive, 2 record the counter under a copy of a name
    /// (moved into the map) and add what was there.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut acc = n;
        let mut total = 0i64;
        let mut pc = 0;
        let name = String::from("count");
        let mut named: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                let s = acc.to_string();
                let t = format!("{s}-{s}");
                total += t.len() as i64 + s.is_empty() as i64;
                super::note_arena();
            } else if op == 2 {
                let key = name.clone();
                total += named.insert(key, acc).unwrap_or(-1);
                super::note_arena();
            } else {
                acc -= 1;
                if acc > 0 {
                    pc = 0;
                }
            }
        }
        total
    }
}

/// Temporary strings are dropped after their last use in compiled code,
/// as Rust drops them, and a copy moved into a map is moved out of the
/// arena, instead of piling up there until the portal returns.
#[test]
fn temporary_strings_do_not_pile_up() {
    temporaries::jit::config().set_threshold(0);
    temporaries::jit::config().set_turn_checks(1);
    for code in [&[0u8, 1][..], &[2, 0, 1], &[2, 1]] {
        let want = temporaries::jit::plain::run(code, 5_000);
        assert_eq!(temporaries::run(code, 5_000), want, "{code:?}");
        assert_eq!(temporaries::jit::specialize::run(code).call(5_000), want, "{code:?}");
    }
    let st = temporaries::jit::stats();
    assert!(st.entries > 0 && st.declined == 0, "{st:?} {:?}", temporaries::jit::last_decline());
    let peak = ARENA_PEAK.with(|p| p.get());
    assert!(peak <= 4, "{peak} objects at once in the arena");
    let listing = temporaries::jit::specialize::run(&[0, 1]).listing().to_string();
    assert!(listing.matches("call drop(").count() >= 2, "{listing}");
}

thread_local! {
    /// How many of this thread's calls of `weigh` were slow (from compiled
    /// code).
    static SLOW_WEIGHS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The length of `s`, slowly where `s` is not on this thread's stack: a
/// `String` residual code made lives in its arena, on the heap, where the
/// interpreter's own local is on its stack. A helper that makes compiled
/// code slower than interpreting, whatever the machine, without changing
/// what either computes.
fn weigh(s: &String) -> i64 {
    let here = 0u8;
    let distance = (s as *const String as usize).abs_diff(&here as *const u8 as usize);
    if distance > 1 << 20 {
        SLOW_WEIGHS.with(|n| n.set(n.get() + 1));
        let until = std::time::Instant::now() + std::time::Duration::from_micros(50);
        while std::time::Instant::now() < until {
            std::hint::spin_loop();
        }
    }
    s.len() as i64
}

/// A loop in one long portal call whose compiled code runs slower than
/// its interpreter (see `weigh`).
#[jit_interpreter]
mod slow_when_compiled {
    use jitgen::prelude::*;

    /// Ops: 0 weighs the counter written out, 1 counts down and loops
    /// while positive.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut acc = n;
        let mut total = 0i64;
        let mut pc = 0;
        while pc < code.len() {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 {
                let s = acc.to_string();
                total += super::weigh(&s);
            } else {
                acc -= 1;
                if acc > 0 {
                    pc = 0;
                }
            }
        }
        total
    }
}

/// Code that runs slower than the interpreter inside one long call is
/// found by its turn checks and retired, with its times in the reason;
/// the run goes on interpreted and agrees with plain.
#[test]
fn code_slower_than_interpreting_in_one_long_call_is_retired() {
    slow_when_compiled::jit::config().set_threshold(0);
    let code = [0u8, 1];
    let want = slow_when_compiled::jit::plain::run(&code, 20_000);
    let t = std::time::Instant::now();
    assert_eq!(slow_when_compiled::run(&code, 20_000), want);
    let took = t.elapsed();
    let st = slow_when_compiled::jit::stats();
    let why = slow_when_compiled::jit::last_decline();
    assert!(st.entries > 0 && st.turn_checks > 0, "{st:?} {why:?}");
    assert_eq!(st.retired_slow, 1, "{st:?} {why:?} in {took:?}");
    assert!(why.as_deref().is_some_and(|w| w.contains("a turn through its entry")), "{why:?}");
    // Most of the 20,000 turns ran interpreted, at the interpreter's pace
    // (all compiled, they take a second).
    assert!(took < std::time::Duration::from_millis(20_000 * 50 / 4000), "{took:?}");
}

/// As `slow_when_compiled`, but a byte-code VM whose position is a field
/// it promotes, with no green at its merge point: its code is a root and
/// the cases of the promotions below it, and a turn passes through cases
/// that call no Rust themselves.
#[jit_interpreter]
mod slow_through_cases {
    use jitgen::prelude::*;

    pub struct Vm {
        pub ip: usize,
        pub step: usize,
        pub acc: i64,
        pub total: i64,
    }

    impl Vm {
        /// Ops: 0 weighs the counter written out, 1 counts down and goes
        /// back to the start while positive, else stops.
        pub fn run(&mut self, code: &[u8]) -> i64 {
            loop {
                hint!(global_merge_point);
                let ip = self.ip;
                hint!(ip, promote);
                if ip >= code.len() {
                    return self.total;
                }
                if code[ip] == 0 {
                    let s = self.acc.to_string();
                    self.total += super::weigh(&s);
                    self.ip = ip + self.step;
                } else {
                    self.acc -= 1;
                    self.ip = if self.acc > 0 { 0 } else { code.len() };
                }
            }
        }
    }
}

/// Slow code whose turns pass through the cases of a promotion is retired
/// too, and the run agrees with plain.
#[test]
fn code_slower_than_interpreting_through_cases_is_retired() {
    use slow_through_cases::Vm;
    slow_through_cases::jit::config().set_threshold(0);
    let code = [0u8, 1];
    let vm = || Vm { ip: 0, step: 1, acc: 20_000, total: 0 };
    let mut plain = vm();
    let want = slow_through_cases::jit::plain::Vm::run(&mut plain, &code);
    let mut jitted = vm();
    let t = std::time::Instant::now();
    SLOW_WEIGHS.with(|n| n.set(0));
    assert_eq!(jitted.run(&code), want);
    let took = t.elapsed();
    let slow = SLOW_WEIGHS.with(|n| n.get());
    assert_eq!((jitted.ip, jitted.acc, jitted.total), (plain.ip, plain.acc, plain.total));
    let st = slow_through_cases::jit::stats();
    let why = slow_through_cases::jit::last_decline();
    assert!(st.entries > 0 && st.turn_checks > 0, "{st:?} {why:?}");
    assert_eq!(st.retired_slow, 1, "{st:?} {why:?} in {took:?}");
    // Most of the 20,000 turns ran interpreted: counted, not timed (a
    // loaded machine stretches the compiling, not the turns).
    assert!(slow > 0 && slow < 20_000 / 4, "{slow} turns weighed by compiled code, in {took:?}");
}
