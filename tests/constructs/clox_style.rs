//! A VM as a port of clox writes it: a `Chunk` struct (code, constants,
//! lines) held in the VM, `self.chunk.code[hint!(self.ip, concrete)]`,
//! `f64` values, and a `binary_op!` macro defined in `run` that pops
//! `self.stack`. Both once kept `self` whole (the split did not expand the
//! body's own `macro_rules!`) or the program red (a struct field only read
//! was passed as `&mut`, so reads of the code were red and the hint was an
//! error). Results and whole final states are compared with `jit::plain`,
//! through the portal and through `jit::specialize`, on random programs.

use jitgen::prelude::*;

#[jit_interpreter]
mod vm {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy)]
    pub enum OpCode {
        Constant(usize),
        Add,
        Subtract,
        Multiply,
        Less,
        JumpIfFalse(usize),
        Jump(usize),
        GetLocal(usize),
        SetLocal(usize),
        Pop,
        Return,
    }

    #[derive(Debug, Default)]
    pub struct Chunk {
        pub code: Vec<OpCode>,
        pub constants: Vec<f64>,
        pub lines: Vec<usize>,
    }

    impl Chunk {
        pub fn write(&mut self, op: OpCode, line: usize) {
            self.code.push(op);
            self.lines.push(line);
        }
        pub fn add_constant(&mut self, v: f64) -> usize {
            self.constants.push(v);
            self.constants.len() - 1
        }
    }

    #[derive(Debug, PartialEq)]
    pub enum InterpretResult {
        Ok(f64),
        RuntimeError(usize),
    }

    pub struct Vm {
        pub chunk: Chunk,
        pub ip: usize,
        pub stack: Vec<f64>,
    }

    impl Vm {
        pub fn new(chunk: Chunk) -> Vm {
            Vm { chunk, ip: 0, stack: Vec::with_capacity(256) }
        }

        pub fn run(&mut self) -> InterpretResult {
            macro_rules! binary_op {
                ($op:tt) => {{
                    let b = self.stack.pop().unwrap();
                    let a = self.stack.pop().unwrap();
                    self.stack.push(a $op b);
                }};
            }
            loop {
                hint!(global_merge_point);
                let instruction = self.chunk.code[hint!(self.ip, concrete)];
                self.ip += 1;
                match instruction {
                    OpCode::Constant(idx) => {
                        let constant = self.chunk.constants[idx];
                        self.stack.push(constant);
                    }
                    OpCode::Add => binary_op!(+),
                    OpCode::Subtract => binary_op!(-),
                    OpCode::Multiply => binary_op!(*),
                    OpCode::Less => {
                        let b = self.stack.pop().unwrap();
                        let a = self.stack.pop().unwrap();
                        self.stack.push(if a < b && a > f64::NEG_INFINITY { 1.0 } else { 0.0 });
                    }
                    OpCode::JumpIfFalse(t) => {
                        if *self.stack.last().unwrap() == 0.0 {
                            self.ip = t;
                        }
                        self.stack.pop();
                    }
                    OpCode::Jump(t) => self.ip = t,
                    OpCode::GetLocal(s) => {
                        let v = self.stack[s];
                        self.stack.push(v);
                    }
                    OpCode::SetLocal(s) => {
                        let v = *self.stack.last().unwrap();
                        self.stack[s] = v;
                        self.stack.pop();
                    }
                    OpCode::Pop => {
                        self.stack.pop();
                    }
                    OpCode::Return => {
                        return match self.stack.pop() {
                            Some(v) => InterpretResult::Ok(v),
                            None => InterpretResult::RuntimeError(self.chunk.lines[self.ip - 1]),
                        };
                    }
                }
            }
        }
    }
}

use vm::{jit, Chunk, InterpretResult, OpCode, Vm};

/// `n` turns of a loop whose body is `body` (operations on local 1, the
/// sum, with local 0, the counter, and constants), then the sum.
fn program(n: f64, body: &[(u8, f64)]) -> Chunk {
    let mut c = Chunk::default();
    let zero = c.add_constant(0.0);
    let one = c.add_constant(1.0);
    let lim = c.add_constant(n);
    c.write(OpCode::Constant(zero), 1);
    c.write(OpCode::Constant(zero), 1);
    let top = c.code.len();
    c.write(OpCode::GetLocal(0), 2);
    c.write(OpCode::Constant(lim), 2);
    c.write(OpCode::Less, 2);
    let exit = c.code.len();
    c.write(OpCode::JumpIfFalse(0), 2);
    for &(op, k) in body {
        c.write(OpCode::GetLocal(1), 3);
        if k < 0.0 {
            c.write(OpCode::GetLocal(0), 3);
        } else {
            let i = c.add_constant(k);
            c.write(OpCode::Constant(i), 3);
        }
        c.write([OpCode::Add, OpCode::Subtract, OpCode::Multiply][op as usize % 3], 3);
        c.write(OpCode::SetLocal(1), 3);
    }
    c.write(OpCode::GetLocal(0), 4);
    c.write(OpCode::Constant(one), 4);
    c.write(OpCode::Add, 4);
    c.write(OpCode::SetLocal(0), 4);
    c.write(OpCode::Jump(top), 4);
    let end = c.code.len();
    c.code[exit] = OpCode::JumpIfFalse(end);
    c.write(OpCode::GetLocal(1), 5);
    c.write(OpCode::Return, 5);
    c
}

fn bits(r: InterpretResult, vm: Vm) -> (Option<u64>, usize, Vec<u64>) {
    let r = match r {
        InterpretResult::Ok(v) => Some(v.to_bits()),
        InterpretResult::RuntimeError(_) => None,
    };
    (r, vm.ip, vm.stack.iter().map(|v| v.to_bits()).collect())
}

fn check(n: f64, body: &[(u8, f64)]) {
    let mut plain = Vm::new(program(n, body));
    let r = jit::plain::Vm::run(&mut plain);
    let want = bits(r, plain);
    let mut vm = Vm::new(program(n, body));
    let r = vm.run();
    assert_eq!(bits(r, vm), want, "{n} {body:?}");
    let mut vm = Vm::new(program(n, body));
    let r = jit::specialize::Vm::run(&mut vm);
    assert_eq!(bits(r, vm), want, "{n} {body:?}");
}

#[test]
fn a_clox_style_vm_splits_its_self_and_compiles_its_loop() {
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
    for n in [0.0, 1.0, 10.0, 1000.0] {
        check(n, &[(0, -1.0)]);
    }
    assert!(jit::stats().compilations > 0, "{:?}", jit::last_decline());
    assert!(jit::stats().entries > 0, "{:?}", jit::last_decline());
}

#[test]
fn random_clox_style_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    jit::config().set_turn_checks(1);
    let mut rng = crate::common::Rng(0xc10c);
    for _ in 0..crate::common::how_many(150) {
        let body: Vec<(u8, f64)> = (0..rng.below(6))
            .map(|_| (rng.below(3) as u8, if rng.below(3) == 0 { -1.0 } else { rng.below(7) as f64 * 0.5 }))
            .collect();
        check(rng.below(40) as f64, &body);
    }
}
