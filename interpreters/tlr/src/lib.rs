//! The TLR interpreter of shared/languages/tlr.md, annotated for jitgen: `interpret`
//! keeps its registers in locals; `run` works on a `#[virtualizable]` `Frame` its
//! caller owns (and may look at afterwards), whose fields live in registers inside
//! residual code and are written back when residual code returns.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod tlr {
    use super::*;

    pub const MOV_A_R: u8 = 1;
    pub const MOV_R_A: u8 = 2;
    pub const JUMP_IF_A: u8 = 3;
    pub const SET_A: u8 = 4;
    pub const ADD_R_TO_A: u8 = 5;
    pub const RETURN_A: u8 = 6;
    pub const ALLOCATE: u8 = 7;
    pub const NEG_A: u8 = 8;
    pub const DECR_A: u8 = 9;

    /// What can go wrong running TLR bytecode.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TlrError {
        /// A register index past the register file.
        BadRegister,
        /// The program counter left the code.
        PcOutOfRange,
        /// An opcode that TLR does not have.
        UnknownOpcode(u8),
    }

    /// Runs `bytecode` with the accumulator set to `a`.
    pub fn interpret(bytecode: &[u8], a: i64) -> Result<i64, TlrError> {
        let mut a = a;
        let mut regs: Vec<i64> = Vec::new();
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            if pc >= bytecode.len() {
                return Err(TlrError::PcOutOfRange);
            }
            let opcode = hint!(bytecode[pc], concrete);
            pc += 1;
            if opcode == RETURN_A {
                return Ok(a);
            }
            if opcode == NEG_A {
                a = a.wrapping_neg();
                continue;
            }
            if opcode == DECR_A {
                a = a.wrapping_sub(1);
                continue;
            }
            if pc >= bytecode.len() {
                return Err(TlrError::PcOutOfRange);
            }
            let arg = bytecode[pc];
            pc += 1;
            match opcode {
                MOV_A_R => {
                    let n = arg as usize;
                    if n >= regs.len() {
                        return Err(TlrError::BadRegister);
                    }
                    regs[n] = a;
                }
                MOV_R_A => {
                    let n = arg as usize;
                    if n >= regs.len() {
                        return Err(TlrError::BadRegister);
                    }
                    a = regs[n];
                }
                JUMP_IF_A => {
                    if a != 0 {
                        pc = arg as usize;
                    }
                }
                SET_A => a = arg as i64,
                ADD_R_TO_A => {
                    let n = arg as usize;
                    if n >= regs.len() {
                        return Err(TlrError::BadRegister);
                    }
                    a = a.wrapping_add(regs[n]);
                }
                ALLOCATE => regs = vec![0; arg as usize],
                _ => return Err(TlrError::UnknownOpcode(opcode)),
            }
        }
    }

    /// The machine state of a TLR run: the accumulator and the registers.
    #[virtualizable]
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub struct Frame {
        /// The accumulator.
        pub a: i64,
        /// The registers (`ALLOCATE n` makes `n` of them, all 0).
        pub regs: Vec<i64>,
        /// Instructions executed.
        pub steps: u64,
    }

    /// Runs `bytecode` on `frame` until `RETURN_A` or an error.
    pub fn run(frame: &mut Frame, bytecode: &[u8]) -> Result<i64, TlrError> {
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            if pc >= bytecode.len() {
                return Err(TlrError::PcOutOfRange);
            }
            let opcode = hint!(bytecode[pc], concrete);
            pc += 1;
            frame.steps += 1;
            if opcode == RETURN_A {
                return Ok(frame.a);
            }
            if opcode == NEG_A {
                frame.a = frame.a.wrapping_neg();
                continue;
            }
            if opcode == DECR_A {
                frame.a = frame.a.wrapping_sub(1);
                continue;
            }
            if pc >= bytecode.len() {
                return Err(TlrError::PcOutOfRange);
            }
            let arg = bytecode[pc];
            pc += 1;
            match opcode {
                MOV_A_R => {
                    let n = arg as usize;
                    if n >= frame.regs.len() {
                        return Err(TlrError::BadRegister);
                    }
                    frame.regs[n] = frame.a;
                }
                MOV_R_A => {
                    let n = arg as usize;
                    if n >= frame.regs.len() {
                        return Err(TlrError::BadRegister);
                    }
                    frame.a = frame.regs[n];
                }
                JUMP_IF_A => {
                    if frame.a != 0 {
                        pc = arg as usize;
                    }
                }
                SET_A => frame.a = arg as i64,
                ADD_R_TO_A => {
                    let n = arg as usize;
                    if n >= frame.regs.len() {
                        return Err(TlrError::BadRegister);
                    }
                    frame.a = frame.a.wrapping_add(frame.regs[n]);
                }
                ALLOCATE => frame.regs = vec![0; arg as usize],
                _ => return Err(TlrError::UnknownOpcode(opcode)),
            }
        }
    }
}
