//! Interpreters as a new user writes them, with Rust jitgen models only as
//! opaque values: a portal taking text (`name: &str`, `init: &str`) that
//! only Rust's own code reads (formatted, split, parsed), program text
//! whose bytes (`text.as_bytes()`) are known while compiling, a local array
//! made by a repeat expression (`[0u8; 300]`, a Brainfuck tape), and a
//! `Vec` collected by Rust's iterators before the loop. Before, each of
//! these left the whole module to Rust. Both give back
//! `Result<Vec<_>, String>`, which compiled code could not return before
//! (the portal never compiled). A third, a method portal of a struct VM
//! whose instructions own `String`s (cloned out of the program) and whose
//! variables are a `HashMap<String, i64>` indexed by `&name`, whose output
//! lines are joined by `String`'s `+`, returns a tuple; either left its
//! module to Rust before, as did the local closures two of them call. A fourth promotes the
//! `char`s of a program Rust's own code collected (a promoted `char` was
//! a compile error in the generated code). Every result is the whole final
//! state (the output and a digest of the tape; the whole stack), compared
//! with `jit::plain` through the portal and `jit::specialize`, on fixed and
//! random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod bf_tape {
    use jitgen::prelude::*;

    /// Runs a Brainfuck program for at most `fuel` steps; gives its output,
    /// then a digest of the tape, the pointer and the steps left; or an
    /// error message naming `name`.
    pub fn run(text: &str, name: &str, fuel: u32) -> Result<Vec<u8>, String> {
        let program = text.as_bytes();
        let mut tape = [0u8; 300];
        let mut ptr = 0usize;
        let mut pc = 0usize;
        let mut steps = fuel;
        let mut out = Vec::new();
        while pc < program.len() && steps > 0 {
            hint!(global_merge_point);
            steps -= 1;
            match hint!(program[pc], concrete) {
                b'>' => {
                    if ptr + 1 >= tape.len() {
                        return Err(format!("{name}: off the tape's end at {pc}"));
                    }
                    ptr += 1;
                }
                b'<' => {
                    if ptr == 0 {
                        return Err(format!("{name}: off the tape's start at {pc}"));
                    }
                    ptr -= 1;
                }
                b'+' => tape[ptr] = tape[ptr].wrapping_add(1),
                b'-' => tape[ptr] = tape[ptr].wrapping_sub(1),
                b'.' => out.push(tape[ptr]),
                b'[' => {
                    if tape[ptr] == 0 {
                        let mut depth = 1;
                        while depth > 0 {
                            pc += 1;
                            match program[pc] {
                                b'[' => depth += 1,
                                b']' => depth -= 1,
                                _ => {}
                            }
                        }
                    }
                }
                b']' => {
                    if tape[ptr] != 0 {
                        let mut depth = 1;
                        while depth > 0 {
                            pc -= 1;
                            match program[pc] {
                                b']' => depth += 1,
                                b'[' => depth -= 1,
                                _ => {}
                            }
                        }
                    }
                }
                _ => {}
            }
            pc += 1;
        }
        let mut digest: u8 = 0;
        let mut i = 0;
        while i < tape.len() {
            digest = digest.wrapping_mul(31).wrapping_add(tape[i]);
            i += 1;
        }
        out.push(digest);
        out.push(ptr as u8);
        out.push(steps as u8);
        out.push((steps >> 8) as u8);
        Ok(out)
    }
}

#[jit_interpreter]
mod text_stack {
    use jitgen::prelude::*;

    /// Ops: 0 k: push k, 1 add, 2 dup, 3 t: jump to t while the top, popped,
    /// is not zero, 4 decrement the top, 5 push a byte of `init` (its text
    /// read as bytes while running). The stack starts as `init`, comma-
    /// separated numbers. Gives the whole stack, then the steps left; an
    /// error names the operation that underflowed.
    pub fn run(code: &[u8], init: &str, fuel: i64) -> Result<Vec<i64>, String> {
        let mut stack: Vec<i64> =
            init.split(',').filter(|s| !s.trim().is_empty()).map(|s| s.trim().parse().unwrap_or(0)).collect();
        let bytes = init.as_bytes();
        let add = |a: i64, b: i64| a.wrapping_add(b);
        let mut pc = 0;
        let mut steps = fuel;
        while pc < code.len() && steps > 0 {
            hint!(global_merge_point);
            steps -= 1;
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == 0 && pc < code.len() {
                let k = hint!(code[pc], concrete);
                pc += 1;
                stack.push(k as i64);
            } else if op == 1 {
                let b = stack.pop().ok_or(format!("add at {pc}: empty"))?;
                let a = stack.pop().ok_or(format!("add at {pc}: one value"))?;
                stack.push(add(a, b));
            } else if op == 2 && !stack.is_empty() {
                let a = stack[stack.len() - 1];
                stack.push(a);
            } else if op == 3 && pc < code.len() {
                let t = hint!(code[pc], concrete);
                pc += 1;
                if let Some(top) = stack.pop() {
                    if top != 0 {
                        pc = t as usize;
                    }
                }
            } else if op == 5 && !bytes.is_empty() {
                // A byte of the text, known only when running.
                stack.push(bytes[steps as usize % bytes.len()] as i64);
            } else if op == 4 && !stack.is_empty() {
                let n = stack.len();
                stack[n - 1] = stack[n - 1].wrapping_sub(1);
            }
        }
        stack.push(steps);
        Ok(stack)
    }
}

#[jit_interpreter]
mod struct_vm {
    use jitgen::prelude::*;
    use std::collections::HashMap;

    /// Instructions that own their names (not `Copy`), cloned out of the
    /// program at each step.
    #[derive(Debug, Clone, PartialEq)]
    pub enum Op {
        Push(i64),
        Add,
        Lt,
        Store(String),
        Load(String),
        JumpIfFalse(usize),
        Jump(usize),
        Print,
        Halt,
    }

    pub struct Vm {
        code: Vec<Op>,
        pub ip: usize,
        pub stack: Vec<i64>,
        pub vars: HashMap<String, i64>,
        pub output: Vec<String>,
    }

    impl Vm {
        pub fn new(code: Vec<Op>) -> Vm {
            Vm { code, ip: 0, stack: Vec::new(), vars: HashMap::new(), output: Vec::new() }
        }

        /// Runs until `Halt` or the end of the fuel; gives the value on
        /// top and the steps taken.
        pub fn run(&mut self, fuel: usize) -> (i64, usize) {
            let mut steps = 0;
            let truth = |b: bool| b as i64;
            while steps < fuel && self.ip < self.code.len() {
                hint!(global_merge_point);
                steps += 1;
                let op = hint!(self.code[self.ip].clone(), concrete);
                self.ip += 1;
                match op {
                    Op::Push(n) => self.stack.push(n),
                    Op::Add => {
                        let b = self.stack.pop().unwrap_or(0);
                        let a = self.stack.pop().unwrap_or(0);
                        self.stack.push(a.wrapping_add(b));
                    }
                    Op::Lt => {
                        let b = self.stack.pop().unwrap_or(0);
                        let a = self.stack.pop().unwrap_or(0);
                        self.stack.push(truth(a < b));
                    }
                    Op::Store(name) => {
                        let v = self.stack.pop().unwrap_or(0);
                        self.vars.insert(name, v);
                    }
                    Op::Load(name) => {
                        let v = if self.vars.contains_key(&name) { self.vars[&name] } else { -1 };
                        self.stack.push(v);
                    }
                    Op::JumpIfFalse(t) => {
                        if self.stack.pop().unwrap_or(0) == 0 {
                            self.ip = t;
                        }
                    }
                    Op::Jump(t) => self.ip = t,
                    Op::Print => {
                        let v = self.stack.last().copied().unwrap_or(0);
                        let at = format!("{}: ", self.ip);
                        self.output.push(at + &v.to_string());
                    }
                    Op::Halt => return (self.stack.last().copied().unwrap_or(0), steps),
                }
            }
            (-1, steps)
        }
    }
}

#[jit_interpreter]
mod bf_chars {
    use jitgen::prelude::*;

    /// The program collected as `char`s by Rust's own code, so known only
    /// when running: each instruction is promoted (`hint!(.., promote)`,
    /// what the message says where `concrete` cannot hold). Gives the
    /// output, then a digest of the tape, the pointer and the steps left.
    pub fn run(src: &str, fuel: u32) -> Vec<u8> {
        let program: Vec<char> = src.chars().collect();
        let mut tape = vec![0u8; 64];
        let mut ptr = 0usize;
        let mut pc = 0usize;
        let mut steps = fuel;
        let mut out = Vec::new();
        while pc < program.len() && steps > 0 {
            hint!(global_merge_point);
            steps -= 1;
            match hint!(program[pc], promote) {
                '>' => ptr = (ptr + 1) % 64,
                '<' => ptr = (ptr + 63) % 64,
                '+' => tape[ptr] = tape[ptr].wrapping_add(1),
                '-' => tape[ptr] = tape[ptr].wrapping_sub(1),
                '.' => out.push(tape[ptr]),
                _ => {}
            }
            pc += 1;
        }
        let mut digest: u8 = 0;
        for i in 0..tape.len() {
            digest = digest.wrapping_mul(31).wrapping_add(tape[i]);
        }
        out.extend([digest, ptr as u8, steps as u8]);
        out
    }
}

fn check_bf(program: &str, fuel: u32) {
    let want = bf_tape::jit::plain::run(program, "prog", fuel);
    assert_eq!(bf_tape::run(program, "prog", fuel), want, "{program:?}");
    assert_eq!(bf_tape::jit::specialize::run(program).call("prog", fuel), want, "{program:?}");
}

fn check_stack(code: &[u8], init: &str, fuel: i64) {
    let want = text_stack::jit::plain::run(code, init, fuel);
    assert_eq!(text_stack::run(code, init, fuel), want, "{code:?} {init:?}");
    assert_eq!(text_stack::jit::specialize::run(code).call(init, fuel), want, "{code:?} {init:?}");
}

#[test]
fn text_parameters_and_local_arrays_compile_and_agree_with_plain() {
    assert!(
        bf_tape::jit::left_to_rust().iter().all(|l| !l.starts_with("the module")),
        "{:?}",
        bf_tape::jit::left_to_rust()
    );
    assert!(
        text_stack::jit::left_to_rust().iter().all(|l| !l.starts_with("the module")),
        "{:?}",
        text_stack::jit::left_to_rust()
    );
    for t in [Some(0), Some(1), Some(5), None] {
        if let Some(t) = t {
            bf_tape::jit::config().set_threshold(t);
            text_stack::jit::config().set_threshold(t);
        }
        for p in ["++++++++[>++++++++<-]>+.[-]++[>+++<-]>.", "<", "+[>+]", ">>>+++[<+>-]<.", "+++[>++[>+<-]<-]>>."] {
            check_bf(p, 5000);
        }
        for init in ["", "3", " 5, 7 ,x", "1,2,3"] {
            check_stack(&[0, 4, 4, 2, 3, 2, 1], init, 1000);
            check_stack(&[2, 1, 2, 4, 2, 3, 3], init, 1000);
            check_stack(&[5, 5, 1, 2, 4, 3, 0], init, 1000);
        }
    }
    bf_tape::jit::config().set_threshold(0);
    text_stack::jit::config().set_threshold(0);
    check_bf("++[>+++<-]>.", 100);
    check_stack(&[0, 9, 4, 2, 3, 2], "1", 100);
    assert!(bf_tape::jit::stats().entries > 0, "{:?}", bf_tape::jit::stats());
    assert!(text_stack::jit::stats().entries > 0, "{:?}", text_stack::jit::stats());
}

#[test]
fn random_programs_over_text_and_local_arrays_agree_with_plain() {
    let mut rng = crate::common::Rng(0x7e57_a11a);
    for i in 0..crate::common::how_many(300) {
        let t = [0, 1, 2, 5][i % 4];
        bf_tape::jit::config().set_threshold(t);
        text_stack::jit::config().set_threshold(t);
        // Brainfuck with balanced brackets.
        let mut p = vec![];
        let mut open = 0;
        for _ in 0..rng.below(24) {
            match rng.below(9) {
                0 => p.push(b'>'),
                1 => p.push(b'<'),
                2 | 3 => p.push(b'+'),
                4 => p.push(b'-'),
                5 => p.push(b'.'),
                6 => {
                    p.push(b'[');
                    open += 1;
                }
                7 if open > 0 => {
                    p.push(b']');
                    open -= 1;
                }
                _ => p.push(b'x'),
            }
        }
        p.extend(std::iter::repeat_n(b']', open));
        check_bf(std::str::from_utf8(&p).expect("ASCII"), 1 + rng.below(3000) as u32);
        let len = 1 + rng.below(10) as usize;
        let mut code = vec![];
        while code.len() < len {
            match rng.below(6) {
                0 => code.extend([0, rng.below(7) as u8]),
                3 => code.extend([3, rng.below(len as u64) as u8]),
                op => code.push(op as u8),
            }
        }
        let init: Vec<String> = (0..rng.below(4)).map(|_| rng.below(9).to_string()).collect();
        check_stack(&code, &init.join(","), 1 + rng.below(500) as i64);
    }
}

/// The whole final state of a run of `struct_vm`: its result, where it
/// stopped, the stack, the variables (sorted) and the output.
type StructVmState = (i64, usize, usize, Vec<i64>, Vec<(String, i64)>, Vec<String>);

fn struct_vm_state(vm: &struct_vm::Vm, r: (i64, usize)) -> StructVmState {
    let mut vars: Vec<(String, i64)> = vm.vars.iter().map(|(k, v)| (k.clone(), *v)).collect();
    vars.sort();
    (r.0, r.1, vm.ip, vm.stack.clone(), vars, vm.output.clone())
}

fn check_struct_vm(code: &[struct_vm::Op], fuel: usize) {
    let mut plain = struct_vm::Vm::new(code.to_vec());
    let r = struct_vm::jit::plain::Vm::run(&mut plain, fuel);
    let want = struct_vm_state(&plain, r);
    let mut vm = struct_vm::Vm::new(code.to_vec());
    let r = vm.run(fuel);
    assert_eq!(struct_vm_state(&vm, r), want, "{code:?}");
    let mut vm = struct_vm::Vm::new(code.to_vec());
    let r = struct_vm::jit::specialize::Vm::run(&mut vm, fuel);
    assert_eq!(struct_vm_state(&vm, r), want, "{code:?}");
}

/// `i = 0; while i < n { i = i + 1 }; print i`.
fn counting_loop(n: i64) -> Vec<struct_vm::Op> {
    use struct_vm::Op::*;
    vec![
        Push(0),
        Store("i".into()),
        Load("i".into()),
        Push(n),
        Lt,
        JumpIfFalse(11),
        Load("i".into()),
        Push(1),
        Add,
        Store("i".into()),
        Jump(2),
        Load("i".into()),
        Print,
        Halt,
    ]
}

#[test]
fn a_method_portal_returning_a_tuple_compiles_and_agrees_with_plain() {
    assert!(
        struct_vm::jit::left_to_rust().iter().all(|l| !l.starts_with("the module")),
        "{:?}",
        struct_vm::jit::left_to_rust()
    );
    for t in [Some(0), Some(1), Some(5), None] {
        if let Some(t) = t {
            struct_vm::jit::config().set_threshold(t);
        }
        for n in [0, 1, 7, 300] {
            check_struct_vm(&counting_loop(n), 10_000);
            check_struct_vm(&counting_loop(n), 25);
        }
    }
    struct_vm::jit::config().set_threshold(0);
    check_struct_vm(&counting_loop(50), 10_000);
    assert!(struct_vm::jit::stats().entries > 0, "{:?}", struct_vm::jit::last_decline());
    // Machines built afresh, each owning its program and the program's
    // `String`s in buffers of its own (all kept alive): the program's
    // canonical copy, made buffer by buffer, keys the code, so after the
    // first run this thread compiles nothing more.
    let mut plain = struct_vm::Vm::new(counting_loop(40));
    let r = struct_vm::jit::plain::Vm::run(&mut plain, 10_000);
    let want = struct_vm_state(&plain, r);
    let mut machines: Vec<struct_vm::Vm> = (0..4).map(|_| struct_vm::Vm::new(counting_loop(40))).collect();
    let mut compiled = vec![];
    for m in machines.iter_mut() {
        let r = m.run(10_000);
        assert_eq!(struct_vm_state(m, r), want);
        compiled.push(struct_vm::jit::portal_listings().len());
    }
    assert!(compiled.windows(2).all(|w| w[0] == w[1]), "{compiled:?}");
    let mut rng = crate::common::Rng(0x5_7a_7e);
    for i in 0..crate::common::how_many(300) {
        struct_vm::jit::config().set_threshold([0, 1, 2, 5][i % 4]);
        let len = 1 + rng.below(12) as usize;
        let names = ["a", "b"];
        let code: Vec<struct_vm::Op> = (0..len)
            .map(|_| match rng.below(9) {
                0 => struct_vm::Op::Push(rng.below(5) as i64 - 1),
                1 => struct_vm::Op::Add,
                2 => struct_vm::Op::Lt,
                3 => struct_vm::Op::Store(rng.pick(&names).into()),
                4 => struct_vm::Op::Load(rng.pick(&names).into()),
                5 => struct_vm::Op::JumpIfFalse(rng.below(len as u64 + 1) as usize),
                6 => struct_vm::Op::Jump(rng.below(len as u64) as usize),
                7 => struct_vm::Op::Print,
                _ => struct_vm::Op::Halt,
            })
            .collect();
        check_struct_vm(&code, 1 + rng.below(400) as usize);
    }
}

#[test]
fn promoted_chars_of_a_program_collected_by_rust_agree_with_plain() {
    let check = |src: &str, fuel: u32| {
        let want = bf_chars::jit::plain::run(src, fuel);
        assert_eq!(bf_chars::run(src, fuel), want, "{src:?}");
        assert_eq!(bf_chars::jit::specialize::run().call(src, fuel), want, "{src:?}");
    };
    bf_chars::jit::config().set_threshold(0);
    check("+++.>++.<.", 100);
    assert!(bf_chars::jit::stats().flexswitches > 0, "{:?}", bf_chars::jit::stats());
    let mut rng = crate::common::Rng(0xc4a2);
    for i in 0..crate::common::how_many(300) {
        bf_chars::jit::config().set_threshold([0, 1, 2, 5][i % 4]);
        let src: String =
            (0..rng.below(30)).map(|_| ['>', '<', '+', '+', '-', '.', 'x'][rng.below(7) as usize]).collect();
        check(&src, 1 + rng.below(40) as u32);
    }
}
