//! An accumulator machine with subroutines, annotated for jitgen.
//!
//! Return addresses live on a run-time stack (a `Vec` in memory, as in any
//! interpreter with calls), so the address `RET` pops is a run-time value.
//! The dispatch needs the next position as a compile-time value: `RET`
//! promotes it. At run time each return site seen gets a flexswitch case
//! that continues compiling at that site.
//!
//! Instructions (one opcode byte, then at most one operand byte):
//! `HALT`, `CALL t` (push the return address, jump to t), `RET`,
//! `ADD n` (a += n, n signed), `DECR` (a -= 1), `JNZ t` (jump if a != 0),
//! `DOUBLE` (a *= 2).

use jitgen::prelude::*;

#[jit_interpreter]
pub mod sub {
    use super::*;

    pub const HALT: u8 = 0;
    pub const CALL: u8 = 1;
    pub const RET: u8 = 2;
    pub const ADD: u8 = 3;
    pub const DECR: u8 = 4;
    pub const JNZ: u8 = 5;
    pub const DOUBLE: u8 = 6;

    /// What can go wrong running a program.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SubError {
        /// The program counter left the code.
        PcOutOfRange,
        /// More nested calls than the stack holds.
        StackOverflow,
        /// `RET` with no caller.
        StackUnderflow,
        /// A byte that is not an opcode.
        UnknownOpcode,
    }

    /// Calls nest at most this deep.
    pub const STACK_SIZE: usize = 64;

    /// Runs `code` with the accumulator set to `a`; returns it at `HALT`.
    pub fn run(code: &[u8], a: i64) -> Result<i64, SubError> {
        let mut a = a;
        let mut pc: usize = 0;
        let mut stack: Vec<i64> = vec![0; STACK_SIZE];
        let mut sp: usize = 0;
        loop {
            hint!(global_merge_point);
            if pc >= code.len() {
                return Err(SubError::PcOutOfRange);
            }
            let op = hint!(code[pc], concrete);
            pc += 1;
            if op == HALT {
                return Ok(a);
            }
            if op == RET {
                if sp == 0 {
                    return Err(SubError::StackUnderflow);
                }
                sp -= 1;
                let target = stack[sp] as usize;
                pc = hint!(target, promote);
                continue;
            }
            if op == DECR {
                a = a.wrapping_sub(1);
                continue;
            }
            if op == DOUBLE {
                a = a.wrapping_mul(2);
                continue;
            }
            if pc >= code.len() {
                return Err(SubError::PcOutOfRange);
            }
            let arg = code[pc];
            pc += 1;
            if op == CALL {
                if sp == STACK_SIZE {
                    return Err(SubError::StackOverflow);
                }
                stack[sp] = pc as i64;
                sp += 1;
                pc = arg as usize;
            } else if op == ADD {
                a = a.wrapping_add(arg as i8 as i64);
            } else if op == JNZ {
                if a != 0 {
                    pc = arg as usize;
                }
            } else {
                return Err(SubError::UnknownOpcode);
            }
        }
    }
}

/// Programs of the machine: the example's and the benchmark harness's.
pub mod programs {
    use super::sub::{ADD, CALL, DECR, HALT, JNZ, RET};

    /// Counts `a` down: each turn calls a subroutine from three sites, and
    /// the subroutine calls another. `RET` pops return addresses (2, 4, 6
    /// and 16), run-time values on the stack that decide where dispatch
    /// goes on.
    pub const COUNTDOWN: &[u8] = &[
        CALL, 14, // 0: call f
        CALL, 14, // 2: call f
        CALL, 14, // 4: call f
        DECR, DECR, DECR, DECR, // 6: a -= 4
        JNZ, 0, // 10: loop while a != 0
        HALT, HALT, // 12
        CALL, 17,  // 14: f: call g
        RET, // 16
        ADD, 1,   // 17: g: a += 1
        RET, // 19
    ];
}
