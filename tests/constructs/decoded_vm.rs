//! A register machine whose program is packed words, each decoded into an
//! instruction struct before it is dispatched, as people write one:
//! `let ins = match Instr::decode(w) { Some(i) => i, None => return Err(..) }`
//! with `Instr { op: Op, a: u8, b: u8, c: u8 }` and `decode` a function of
//! the module returning `Option<Instr>`. The word is known while compiling,
//! so the decoded struct is too (a value struct: `Copy`, of words, never
//! written): its operands index the registers as constants and a jump's
//! target is a known program counter. Before, `self.pc = ins.b as usize`
//! was refused ("concrete cannot be satisfied"). Results and whole final
//! states (registers, program counter) are compared with `jit::plain`,
//! through the portal and through `jit::specialize`; random programs too,
//! some with a word that decodes to nothing. The machine's enum fields (an
//! `Option`, moved, and a `Copy` enum, copied) are taken out of `self` for
//! the call, so that its counter is still the portal's green state. The
//! decoded struct is also kept whole in the machine (`self.last = ins`): a
//! store through the portal's own `&mut`, which leaves it a value.

use jitgen::prelude::*;

#[jit_interpreter]
mod decvm {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Op {
        Load,
        Add,
        Sub,
        Jnz,
        Ret,
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Instr {
        pub op: Op,
        pub a: u8,
        pub b: u8,
        pub c: u8,
    }

    impl Op {
        fn from_byte(b: u8) -> Option<Op> {
            match b {
                0 => Some(Op::Load),
                1 => Some(Op::Add),
                2 => Some(Op::Sub),
                3 => Some(Op::Jnz),
                4 => Some(Op::Ret),
                _ => None,
            }
        }
    }

    impl Instr {
        pub fn decode(w: u32) -> Option<Instr> {
            let op = Op::from_byte((w & 0xff) as u8)?;
            Some(Instr { op, a: (w >> 8) as u8 & 15, b: (w >> 16) as u8, c: (w >> 24) as u8 & 15 })
        }
    }

    /// Where a jump goes: a helper taking the instruction by value.
    fn target(i: Instr) -> usize {
        i.b as usize
    }

    pub fn encode(op: u8, a: u8, b: u8, c: u8) -> u32 {
        op as u32 | (a as u32) << 8 | (b as u32) << 16 | (c as u32) << 24
    }

    /// What the last `Sub` gave (`Copy`, without `Default`).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Flags {
        Clear,
        Zero,
        Negative,
    }

    #[derive(Debug, Clone, PartialEq)]
    pub struct Cpu {
        pub regs: [i64; 16],
        pub pc: usize,
        pub flags: Flags,
        pub last_jump: Option<usize>,
        pub last: Instr,
    }

    impl Cpu {
        pub fn run(&mut self, code: &[u32]) -> Result<i64, String> {
            while self.pc < code.len() {
                hint!(global_merge_point);
                let w = hint!(code[self.pc], concrete);
                let ins = match Instr::decode(w) {
                    Some(i) => i,
                    None => return Err(format!("bad instruction {w:#x} at {}", self.pc)),
                };
                self.pc += 1;
                self.last = ins;
                let (a, b, c) = (ins.a as usize, ins.b as usize, ins.c as usize);
                match ins.op {
                    Op::Load => self.regs[a] = ins.b as i64,
                    Op::Add => self.regs[a] = self.regs[b & 15].wrapping_add(self.regs[c]),
                    Op::Sub => {
                        let r = self.regs[b & 15].wrapping_sub(self.regs[c]);
                        self.regs[a] = r;
                        self.flags = if r == 0 {
                            Flags::Zero
                        } else if r < 0 {
                            Flags::Negative
                        } else {
                            Flags::Clear
                        };
                    }
                    Op::Jnz => {
                        if self.regs[a] != 0 {
                            self.last_jump = Some(self.pc - 1);
                            self.pc = target(ins);
                        }
                    }
                    Op::Ret => return Ok(self.regs[a]),
                }
            }
            Err(format!("fell off at {}", self.pc))
        }
    }
}

use decvm::{encode as e, jit, Cpu};

fn check(code: &[u32]) -> Result<i64, String> {
    let fresh = || Cpu {
        regs: [0; 16],
        pc: 0,
        flags: decvm::Flags::Clear,
        last_jump: None,
        last: decvm::Instr { op: decvm::Op::Ret, a: 0, b: 0, c: 0 },
    };
    let mut plain = fresh();
    let want = jit::plain::Cpu::run(&mut plain, code);
    let mut m = fresh();
    assert_eq!(m.run(code), want, "{code:x?}");
    assert_eq!(m, plain, "{code:x?}");
    let mut m = fresh();
    assert_eq!(jit::specialize::Cpu::run(&mut m, code), want, "{code:x?}");
    assert_eq!(m, plain, "{code:x?}");
    want
}

#[test]
fn a_decoded_instruction_struct_is_known_while_compiling() {
    jit::config().set_threshold(0);
    // r0 += r1 for r1 = n..1, in an outer loop of 3 turns.
    let sum = |n| {
        vec![e(0, 0, 0, 0), e(0, 4, 3, 0), e(0, 2, 1, 0), e(0, 1, n, 0), e(1, 0, 0, 1), e(2, 1, 1, 2), e(3, 1, 4, 0)]
            .into_iter()
            .chain([e(2, 4, 4, 2), e(3, 4, 3, 0), e(4, 0, 0, 0)])
            .collect::<Vec<_>>()
    };
    for n in [1, 7, 200] {
        let n32 = n as i64;
        assert_eq!(check(&sum(n)), Ok(3 * n32 * (n32 + 1) / 2));
    }
    assert_eq!(check(&[e(0, 0, 0, 0), e(9, 0, 0, 0)]), Err("bad instruction 0x9 at 1".to_string()));
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
    let s = jit::stats();
    assert!(s.compilations > 0 && s.entries > 0 && s.declined == 0, "{s:?} {:?}", jit::last_decline());
    // Decoding happened while compiling: no residual call decodes, and the
    // registers are addressed at constant offsets (no bounds checks on
    // operands known to be in range).
    let listing = jit::portal_listings().join("\n");
    assert!(!listing.contains("decode") && !listing.contains("bounds_check"), "{listing}");
    assert!(listing.contains("add.i64") && listing.contains("load.i64 v1+8"), "{listing}");
}

#[test]
fn random_decoded_programs_agree_with_plain() {
    jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xdec_0de);
    for _ in 0..crate::common::how_many(200) {
        let mut code = vec![e(0, 2, 1 + rng.below(20) as u8, 0), e(0, 3, 1, 0)];
        for _ in 0..1 + rng.below(6) {
            let (a, b, c) = (rng.below(2) as u8, rng.below(5) as u8, rng.below(5) as u8);
            code.push(match rng.below(9) {
                0..=2 => e(0, a, rng.below(60) as u8, 0),
                3..=5 => e(1, a, b, c),
                6 | 7 => e(2, a, b, c),
                // A word that decodes to nothing, or a `Ret` out of the loop.
                _ => e(if rng.below(2) == 0 { 5 + rng.below(200) as u8 } else { 4 }, a, 0, 0),
            });
        }
        // r2 -= r3 (one); loop while r2 != 0; return a register.
        code.extend([e(2, 2, 2, 3), e(3, 2, 2, 0), e(4, rng.below(5) as u8, 0, 0)]);
        let _ = check(&code);
    }
}

/// A decoded instruction of scalar fields kept in the machine as
/// `last: Option<Instr>` (`self.last = Some(ins)`, or `None` on a path the
/// program decides): stored as the `Option`'s words, not outlined.
#[jit_interpreter]
mod keptvm {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Instr {
        pub op: u8,
        pub k: u8,
    }

    impl Instr {
        pub fn decode(w: u16) -> Instr {
            Instr { op: (w >> 8) as u8, k: w as u8 }
        }
    }

    #[derive(Debug, Clone, PartialEq, Default)]
    pub struct Machine {
        pub acc: i64,
        pub pc: usize,
        pub steps: u32,
        pub last: Option<Instr>,
    }

    impl Machine {
        /// Words `op << 8 | k`: 0 adds k; 1 subtracts k; 2 jumps to k while
        /// the accumulator is positive; 3 forgets the last instruction. At
        /// most 5,000 steps.
        pub fn run(&mut self, code: &[u16]) -> i64 {
            while self.pc < code.len() && self.steps < 5000 {
                hint!(global_merge_point);
                self.steps += 1;
                let ins = Instr::decode(hint!(code[self.pc], concrete));
                self.pc += 1;
                let kept = if self.acc % 3 == 0 { Some(ins) } else { None };
                match ins.op {
                    0 => self.acc += ins.k as i64,
                    1 => self.acc -= ins.k as i64,
                    2 if self.acc > 0 => self.pc = ins.k as usize,
                    3 => {
                        self.last = kept;
                        continue;
                    }
                    _ => {}
                }
                self.last = Some(ins);
            }
            self.acc
        }
    }
}

#[test]
fn a_decoded_instruction_kept_in_an_option_field_agrees_with_plain() {
    use keptvm::{jit, Machine};
    jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x4ee_7);
    for _ in 0..crate::common::how_many(100) {
        let w = |op: u16, k: u16| op << 8 | k;
        let mut code = vec![w(0, 1 + rng.below(40) as u16)];
        for _ in 0..1 + rng.below(5) {
            code.push(w(rng.below(4) as u16, rng.below(6) as u16));
        }
        code.extend([w(1, 1 + rng.below(3) as u16), w(2, 1)]);
        let mut plain = Machine::default();
        let want = jit::plain::Machine::run(&mut plain, &code);
        let mut m = Machine::default();
        assert_eq!((m.run(&code), &m), (want, &plain), "{code:x?}");
        let mut m = Machine::default();
        assert_eq!((jit::specialize::Machine::run(&mut m, &code), &m), (want, &plain), "{code:x?}");
    }
    assert!(jit::left_to_rust().is_empty(), "{:?}", jit::left_to_rust());
    let s = jit::stats();
    assert!(s.compilations > 0 && s.declined == 0, "{s:?} {:?}", jit::last_decline());
}
