//! A Brainfuck machine as a new user writes one: its tape a `Box<[u8]>`
//! field (`vec![0; n].into_boxed_slice()`), its program parsed into an enum
//! with jump targets, bounds checked with `self.tape.len()`, read with
//! `self.tape.get(..)`. The tape's address and length are read from the box
//! where the machine is compiled. Random programs compare the whole final
//! machine (tape, pointer, output) and the result with `jit::plain`, through
//! the portal and through `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod bf {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Instr {
        Add(u8),
        Move(isize),
        Out,
        Peek(usize),
        JumpIfZero(usize),
        JumpIfNonZero(usize),
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum BfError {
        OffTheTape { at: usize },
    }

    #[derive(Debug, PartialEq)]
    pub struct Machine {
        pub tape: Box<[u8]>,
        pub ptr: usize,
        pub output: Vec<u8>,
    }

    impl Machine {
        pub fn new(len: usize) -> Machine {
            Machine { tape: vec![0u8; len].into_boxed_slice(), ptr: 0, output: Vec::new() }
        }

        pub fn run(&mut self, program: &[Instr]) -> Result<usize, BfError> {
            let mut pc = 0;
            let mut steps = 0;
            while pc < program.len() {
                hint!(global_merge_point);
                steps += 1;
                match hint!(program[pc], concrete) {
                    Instr::Add(n) => self.tape[self.ptr] = self.tape[self.ptr].wrapping_add(n),
                    Instr::Move(d) => {
                        let np = self.ptr as isize + d;
                        if np < 0 || np as usize >= self.tape.len() {
                            return Err(BfError::OffTheTape { at: pc });
                        }
                        self.ptr = np as usize;
                    }
                    Instr::Out => self.output.push(self.tape[self.ptr]),
                    // A cell further on, or 0 past the end.
                    Instr::Peek(k) => {
                        let v = self.tape.get(self.ptr + k).copied().unwrap_or(0);
                        self.output.push(v);
                    }
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
            Ok(steps)
        }
    }
}

use bf::{Instr, Machine};

/// Brainfuck source (and `0`-`3` for `Peek`) as instructions, its loops
/// matched.
fn parse(src: &str) -> Vec<Instr> {
    let (mut out, mut open) = (vec![], vec![]);
    for c in src.bytes() {
        let ins = match c {
            b'+' => Instr::Add(1),
            b'-' => Instr::Add(255),
            b'>' => Instr::Move(1),
            b'<' => Instr::Move(-1),
            b'.' => Instr::Out,
            b'0'..=b'3' => Instr::Peek((c - b'0') as usize),
            b'[' => {
                open.push(out.len());
                Instr::JumpIfZero(0)
            }
            b']' => {
                let (o, here) = (open.pop().expect("balanced"), out.len());
                out[o] = Instr::JumpIfZero(here);
                Instr::JumpIfNonZero(o)
            }
            _ => continue,
        };
        out.push(ins);
    }
    out
}

/// The same result and the same whole machine, interpreted, through the
/// portal and through `jit::specialize`.
fn check(src: &str, tape: usize) -> (Result<usize, bf::BfError>, Vec<u8>) {
    let program = parse(src);
    let mut want_m = Machine::new(tape);
    let want = bf::jit::plain::Machine::run(&mut want_m, &program);
    let mut m = Machine::new(tape);
    assert_eq!(m.run(&program), want, "{src}");
    assert_eq!(m, want_m, "{src}");
    let mut m = Machine::new(tape);
    assert_eq!(bf::jit::specialize::Machine::run(&mut m, &program), want, "{src}");
    assert_eq!(m, want_m, "{src}");
    (want, want_m.output)
}

#[test]
fn a_boxed_slice_tape_compiles_and_agrees_with_plain() {
    bf::jit::config().set_threshold(0);
    let (done, output) = check("++++++++[>++++++++<-]>+.>+++[>++<-]>.<<0123", 8);
    assert!(done.is_ok() && output == [65, 6, 65, 0, 6, 0], "{done:?} {output:?}");
    // Off the tape at either end.
    assert_eq!(check("+>>>.", 3).0, Err(bf::BfError::OffTheTape { at: 3 }));
    assert_eq!(check("<", 3).0, Err(bf::BfError::OffTheTape { at: 0 }));
    let left = bf::jit::left_to_rust();
    assert!(left.iter().all(|l| l.starts_with("Machine::new")), "{left:?}");
    let stats = bf::jit::stats();
    assert!(stats.compilations > 0 && stats.declined == 0, "{:?}", bf::jit::last_decline());
    // The tape is read and written in place: no residual call but the
    // output's growth, and the output put back in order at an exit.
    let listings = bf::jit::portal_listings().join("\n");
    let calls: Vec<&str> = listings
        .lines()
        .filter(|l| l.contains("call") && !l.contains("vec_reserve") && !l.contains("give_back_order"))
        .collect();
    assert!(!listings.is_empty() && calls.is_empty(), "{calls:?}");
}

/// A random program whose loops end: a loop decrements the cell it tests
/// and leaves it alone otherwise (its other steps are on other cells,
/// moving there and back).
fn program(rng: &mut crate::common::Rng, depth: u32) -> String {
    let mut src = String::new();
    for _ in 0..rng.below(if depth == 0 { 16 } else { 4 }) {
        let step = rng.below(8);
        match (depth, step) {
            (0, 0 | 1) => src.push('+'),
            (0, 2) => src.push('-'),
            (0, 3) => src.push('>'),
            (0, 4) => src.push('<'),
            (_, 5) => src.push_str(rng.pick(&[".", "0", "1", "3"])),
            (_, 6) if depth < 2 => {
                src.push_str("[-");
                src.push_str(&program(rng, depth + 1));
                src.push(']');
            }
            (_, 7) if depth < 2 => {
                // Another cell: the next, or the one before.
                let (there, back) = if rng.below(2) == 0 { (">", "<") } else { ("<", ">") };
                src.push_str(there);
                src.push_str(rng.pick(&["+", "++", "-", "."]));
                src.push_str(back);
            }
            _ => src.push('.'),
        }
    }
    src
}

#[test]
fn random_programs_on_a_boxed_tape_agree_with_plain() {
    bf::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xb0c5);
    for _ in 0..crate::common::how_many(200) {
        let src = program(&mut rng, 0);
        let _ = check(&src, 2 + rng.below(6) as usize);
    }
}
