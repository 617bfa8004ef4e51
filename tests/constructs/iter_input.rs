//! Input read through an iterator, as tutorials write it: a Brainfuck
//! machine whose `,` takes `inp.next()` of `let mut inp = input.iter();`
//! bound before the portal's loop, and a checksum of a `&str` stepping
//! `s.bytes()` with `while let Some(b) = it.next()`. Before, the iterator
//! local left the whole module to Rust; now the module compiles (the
//! iterator is an index into its slice). Whole machines are compared with
//! `jit::plain`, through the portal and through `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod bf {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Instr {
        Add(u8),
        Move(isize),
        Out,
        In,
        JumpIfZero(usize),
        JumpIfNonZero(usize),
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct Machine {
        pub tape: Vec<u8>,
        pub ptr: usize,
        pub output: Vec<u8>,
    }

    /// A checksum of a name, stepping its bytes.
    pub fn checksum(s: &str) -> u32 {
        let mut it = s.bytes();
        let mut h = 7u32;
        while let Some(b) = it.next() {
            h = h.wrapping_mul(31).wrapping_add(b as u32);
        }
        h
    }

    impl Machine {
        pub fn run(&mut self, program: &[Instr], input: &[u8], name: &str) -> Result<u32, usize> {
            let mut inp = input.iter();
            let mut pc = 0;
            while pc < program.len() {
                hint!(global_merge_point);
                match hint!(program[pc], concrete) {
                    Instr::Add(n) => self.tape[self.ptr] = self.tape[self.ptr].wrapping_add(n),
                    Instr::Move(d) => {
                        let np = self.ptr as isize + d;
                        if np < 0 || np as usize >= self.tape.len() {
                            return Err(pc);
                        }
                        self.ptr = np as usize;
                    }
                    Instr::Out => self.output.push(self.tape[self.ptr]),
                    Instr::In => self.tape[self.ptr] = inp.next().copied().unwrap_or(0),
                    Instr::JumpIfZero(t) => {
                        if self.tape[self.ptr] == 0 {
                            pc = t;
                        }
                    }
                    Instr::JumpIfNonZero(t) => {
                        if self.tape[self.ptr] != 0 {
                            pc = t;
                        }
                    }
                }
                pc += 1;
            }
            Ok(checksum(name) ^ self.ptr as u32)
        }
    }
}

use bf::{Instr, Machine};

fn parse(src: &str) -> Vec<Instr> {
    let mut out = vec![];
    let mut open = vec![];
    for c in src.bytes() {
        let ins = match c {
            b'+' => Instr::Add(1),
            b'-' => Instr::Add(255),
            b'>' => Instr::Move(1),
            b'<' => Instr::Move(-1),
            b'.' => Instr::Out,
            b',' => Instr::In,
            b'[' => {
                open.push(out.len());
                Instr::JumpIfZero(0)
            }
            b']' => {
                let o = open.pop().expect("balanced");
                out[o] = Instr::JumpIfZero(out.len());
                Instr::JumpIfNonZero(o)
            }
            _ => continue,
        };
        out.push(ins);
    }
    out
}

fn fresh() -> Machine {
    Machine { tape: vec![0; 16], ptr: 0, output: vec![] }
}

/// The whole machine after a run, and the run's result.
fn check(program: &[Instr], input: &[u8], name: &str) -> (Result<u32, usize>, Machine) {
    let mut m = fresh();
    let want = (bf::jit::plain::Machine::run(&mut m, program, input, name), m);
    let mut m = fresh();
    assert_eq!((m.run(program, input, name), m), want, "{program:?} {input:?}");
    let mut m = fresh();
    let got = bf::jit::specialize::Machine::run(&mut m, program, input, name);
    assert_eq!((got, m), want, "{program:?} {input:?}");
    want
}

#[test]
fn input_read_through_an_iterator_compiles_and_agrees_with_plain() {
    bf::jit::config().set_threshold(0);
    // Reads three bytes, adds them, prints the sum; a fourth read past the
    // input gives 0; a loop copies the first cell into the second.
    let program = parse(",>,>,<[-<+>]>[-<<+>>]<<.>>>,.<<<[->+<]>.");
    let (r, m) = check(&program, &[5, 7, 9], "done");
    assert_eq!(r, Ok(bf::jit::plain::checksum("done") ^ m.ptr as u32));
    assert_eq!(m.output, [21, 0, 21]);
    assert!(bf::jit::left_to_rust().is_empty(), "{:?}", bf::jit::left_to_rust());
    let stats = bf::jit::stats();
    assert!(stats.compilations > 0 && stats.declined == 0, "{stats:?} {:?}", bf::jit::last_decline());
}

#[test]
fn random_programs_reading_input_agree_with_plain() {
    bf::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xb7_1e);
    for _ in 0..crate::common::how_many(200) {
        // Straight code and loops that end: `[-]`-style loops on a fresh
        // cell, and moves that may run off the tape.
        let mut src = String::new();
        for _ in 0..rng.below(14) {
            src.push_str(match rng.below(9) {
                0 | 1 => "+",
                2 => "-",
                3 => ">",
                4 => "<",
                5 => ".",
                6 | 7 => ",",
                _ => "[-]",
            });
        }
        let input: Vec<u8> = (0..rng.below(5)).map(|_| rng.below(256) as u8).collect();
        let name = ["", "a", "bytes"][rng.below(3) as usize];
        let _ = check(&parse(&src), &input, name);
    }
}
