//! A register machine as people write one: registers in an array field
//! (`regs: [i64; 4]`), the program a boxed slice of instructions with
//! register operands (`Box<[Instr]>`, passed to the portal as the slice it
//! holds; before, it left `self` whole and the module to Rust), and a
//! field of a type the analysis does not model (a `BTreeSet` of the values
//! stored). `self` is split into its fields: the
//! array and the set passed by reference (they left `self` whole, and the
//! portal then had no green program counter and never compiled). Results
//! and whole final states are compared with `jit::plain`, through the
//! portal and through `jit::specialize`; random programs too. A machine
//! built afresh for each run finds the code compiled for the same program
//! in another buffer.

use jitgen::prelude::*;

#[jit_interpreter]
mod regvm {
    use jitgen::prelude::*;
    use std::collections::BTreeSet;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Instr {
        LoadI(u8, i64),
        Add(u8, u8),
        Dec(u8),
        Store(u8),
        Jnz(u8, usize),
        Halt(u8),
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct Machine {
        pub regs: [i64; 4],
        pub pc: usize,
        pub code: Box<[Instr]>,
        pub stored: BTreeSet<i64>,
    }

    impl Machine {
        pub fn run(&mut self) -> i64 {
            loop {
                hint!(global_merge_point);
                let ins = hint!(self.code[self.pc], concrete);
                self.pc += 1;
                match ins {
                    Instr::LoadI(r, v) => self.regs[r as usize] = v,
                    Instr::Add(a, b) => {
                        self.regs[a as usize] = self.regs[a as usize].wrapping_add(self.regs[b as usize])
                    }
                    Instr::Dec(r) => self.regs[r as usize] -= 1,
                    Instr::Store(r) => {
                        self.stored.insert(self.regs[r as usize] & 0xff);
                    }
                    Instr::Jnz(r, to) => {
                        if self.regs[r as usize] != 0 {
                            self.pc = to;
                        }
                    }
                    Instr::Halt(r) => return self.regs[r as usize],
                }
            }
        }
    }
}

use regvm::{jit, Instr::*, Machine};

fn machine(code: Vec<regvm::Instr>) -> Machine {
    Machine { regs: [0, 0, 0, 7], pc: 0, code: code.into_boxed_slice(), stored: Default::default() }
}

fn check(code: Vec<regvm::Instr>) {
    let mut plain = machine(code.clone());
    let want = jit::plain::Machine::run(&mut plain);
    let mut m = machine(code.clone());
    assert_eq!(m.run(), want, "{code:?}");
    assert_eq!(m, plain, "{code:?}");
    let mut m = machine(code.clone());
    assert_eq!(jit::specialize::Machine::run(&mut m), want, "{code:?}");
    assert_eq!(m, plain, "{code:?}");
}

#[test]
fn a_register_machine_with_an_array_of_registers_compiles_and_agrees_with_plain() {
    jit::config().set_threshold(0);
    // r0 = sum of 1..=n, storing each partial sum.
    let sum = |n| vec![LoadI(0, 0), LoadI(1, n), Add(0, 1), Store(0), Dec(1), Jnz(1, 2), Halt(0)];
    for n in [1, 5, 300] {
        check(sum(n));
    }
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
    let s = jit::stats();
    assert!(s.compilations > 0 && s.entries > 0 && s.declined == 0, "{s:?} {:?}", jit::last_decline());
    // The registers are an object in memory; the program is known.
    let listing = jit::portal_listings().join("\n");
    assert!(listing.contains("insert") && !listing.contains("Add"), "{listing}");
    // Machines built afresh, each with its program in a buffer of its own
    // (all kept alive): the program's canonical copy keys the code, so
    // after the first run this thread compiles nothing more.
    let mut machines: Vec<Machine> = (0..4).map(|_| machine(sum(40))).collect();
    let mut plain = machine(sum(40));
    let want = jit::plain::Machine::run(&mut plain);
    let mut compiled = vec![];
    for m in machines.iter_mut() {
        assert_eq!(m.run(), want);
        // The whole machine: registers, position, the set stored.
        assert_eq!(*m, plain);
        compiled.push(jit::portal_listings().len());
    }
    assert!(machines.windows(2).all(|w| w[0].code.as_ptr() != w[1].code.as_ptr()));
    assert!(compiled.windows(2).all(|w| w[0] == w[1]), "{compiled:?}");
}

#[test]
fn random_register_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x4e9_15);
    for _ in 0..crate::common::how_many(200) {
        let len = 1 + rng.below(8) as usize;
        let mut code = vec![LoadI(2, 1 + rng.below(30) as i64)];
        for _ in 0..len {
            let (a, b) = (rng.below(2) as u8, rng.below(4) as u8);
            code.push(match rng.below(4) {
                0 => LoadI(a, rng.below(100) as i64 - 50),
                1 => Add(a, b),
                2 => Store(b),
                _ => Dec(a),
            });
        }
        code.extend([Dec(2), Jnz(2, 1), Halt(rng.below(4) as u8)]);
        check(code);
    }
}

/// The same machine with instructions as structs of an opcode and its
/// operands (`struct Instr { op: Op, a: u8, b: u8, k: i64 }`), read by
/// value: `let ins = self.code[self.pc];`. A `Copy` struct bound from data
/// behind a shared reference (the split's program field) is not copied, so
/// its fields are the program's, known while compiling (the copy was an
/// allocation compiled code could not make, and the portal declined).
#[jit_interpreter]
mod structvm {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Op {
        LoadI,
        Add,
        Dec,
        Jnz,
        Halt,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Instr {
        pub op: Op,
        pub a: u8,
        pub b: u8,
        pub k: i64,
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct Machine {
        pub regs: [i64; 4],
        pub pc: usize,
        pub code: Vec<Instr>,
    }

    impl Machine {
        pub fn run(&mut self) -> i64 {
            loop {
                hint!(global_merge_point);
                let pc = hint!(self.pc, promote);
                let ins = self.code[pc];
                self.pc = pc + 1;
                match ins.op {
                    Op::LoadI => self.regs[ins.a as usize] = ins.k,
                    Op::Add => {
                        self.regs[ins.a as usize] = self.regs[ins.a as usize].wrapping_add(self.regs[ins.b as usize])
                    }
                    Op::Dec => self.regs[ins.a as usize] -= 1,
                    Op::Jnz => {
                        if self.regs[ins.a as usize] != 0 {
                            self.pc = ins.k as usize;
                        }
                    }
                    Op::Halt => return self.regs[ins.a as usize],
                }
            }
        }
    }
}

fn check_struct(code: Vec<structvm::Instr>) {
    use structvm::{jit, Machine};
    let fresh = || Machine { regs: [0, 0, 0, 7], pc: 0, code: code.clone() };
    let mut plain = fresh();
    let want = jit::plain::Machine::run(&mut plain);
    let mut m = fresh();
    assert_eq!(m.run(), want, "{code:?}");
    assert_eq!(m, plain, "{code:?}");
    let mut m = fresh();
    assert_eq!(jit::specialize::Machine::run(&mut m), want, "{code:?}");
    assert_eq!(m, plain, "{code:?}");
}

#[test]
fn instructions_as_structs_read_by_value_compile_and_agree_with_plain() {
    use structvm::{jit, Instr, Op};
    jit::config().set_threshold(0);
    let i = |op, a, b, k| Instr { op, a, b, k };
    let mut rng = crate::common::Rng(0x57_4c7);
    for round in 0..crate::common::how_many(150) {
        let mut code = vec![i(Op::LoadI, 2, 0, 1 + rng.below(20) as i64)];
        for _ in 0..1 + rng.below(6) {
            let (a, b) = (rng.below(2) as u8, rng.below(4) as u8);
            code.push(match rng.below(3) {
                0 => i(Op::LoadI, a, 0, rng.below(50) as i64 - 25),
                1 => i(Op::Add, a, b, 0),
                _ => i(Op::Dec, a, 0, 0),
            });
        }
        code.extend([i(Op::Dec, 2, 0, 0), i(Op::Jnz, 2, 0, 1), i(Op::Halt, rng.below(4) as u8, 0, 0)]);
        check_struct(code);
        if round == 0 {
            let s = jit::stats();
            assert!(s.compilations > 0 && s.declined == 0, "{s:?} {:?}", jit::last_decline());
        }
    }
}
