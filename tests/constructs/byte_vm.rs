//! A bytecode VM as a new user writes one, not for jitgen: opcodes are
//! `u8` constants over a `&[u8]` program with little-endian `u16` jump
//! targets, `impl Vm { fn run(&mut self, code: &[u8]) }` keeps its operand
//! stack in a `Vec<i64>` field and its calls in a `Vec<Frame>` field, the
//! position is `self.pc`, errors go out with `?`, and `Ret` promotes the
//! popped return address. `self` splits: the stack is wrapped and passed by
//! `&mut`, the frames move in (a recursion spills them), the position is a
//! cell whose forward steps skip the hook. Random programs, calls and
//! returns among them, agree with `jit::plain` on the whole final state,
//! through the portal and `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
pub mod bvm {
    use jitgen::prelude::*;

    pub const OP_CONST: u8 = 0;
    pub const OP_ADD: u8 = 1;
    pub const OP_SUB: u8 = 2;
    pub const OP_LT: u8 = 3;
    pub const OP_JMP: u8 = 4;
    pub const OP_JZ: u8 = 5;
    pub const OP_LOAD: u8 = 6;
    pub const OP_STORE: u8 = 7;
    pub const OP_CALL: u8 = 8;
    pub const OP_RET: u8 = 9;
    pub const OP_HALT: u8 = 10;
    pub const OP_POP: u8 = 11;
    pub const OP_DUP: u8 = 12;

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum VmError {
        StackUnderflow,
        BadOpcode(u8),
        NoFrame,
        TooLong,
    }

    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Frame {
        return_pc: usize,
        base: usize,
    }

    /// The machine; `max_steps` bounds a run.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Vm {
        pub stack: Vec<i64>,
        pub frames: Vec<Frame>,
        pub pc: usize,
        pub steps: u64,
        pub max_steps: u64,
    }

    impl Vm {
        pub fn new(max_steps: u64) -> Self {
            Vm { stack: Vec::with_capacity(256), frames: Vec::new(), pc: 0, steps: 0, max_steps }
        }

        fn pop(&mut self) -> Result<i64, VmError> {
            self.stack.pop().ok_or(VmError::StackUnderflow)
        }

        fn read_u16(&mut self, code: &[u8]) -> usize {
            let v = u16::from_le_bytes([code[self.pc], code[self.pc + 1]]) as usize;
            self.pc += 2;
            v
        }

        pub fn run(&mut self, code: &[u8]) -> Result<i64, VmError> {
            loop {
                hint!(global_merge_point);
                let op = code[hint!(self.pc, concrete)];
                self.pc += 1;
                self.steps += 1;
                if self.steps > self.max_steps {
                    return Err(VmError::TooLong);
                }
                match op {
                    OP_CONST => {
                        let v = code[self.pc] as i8 as i64;
                        self.pc += 1;
                        self.stack.push(v);
                    }
                    OP_ADD => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_add(b));
                    }
                    OP_SUB => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push(a.wrapping_sub(b));
                    }
                    OP_LT => {
                        let b = self.pop()?;
                        let a = self.pop()?;
                        self.stack.push((a < b) as i64);
                    }
                    OP_JMP => {
                        let target = self.read_u16(code);
                        self.pc = target;
                    }
                    OP_JZ => {
                        let target = self.read_u16(code);
                        if self.pop()? == 0 {
                            self.pc = target;
                        }
                    }
                    OP_LOAD => {
                        let slot = code[self.pc] as usize;
                        self.pc += 1;
                        let base = self.frames.last().map(|f| f.base).unwrap_or(0);
                        let v = self.stack[base + slot];
                        self.stack.push(v);
                    }
                    OP_STORE => {
                        let slot = code[self.pc] as usize;
                        self.pc += 1;
                        let base = self.frames.last().map(|f| f.base).unwrap_or(0);
                        let v = *self.stack.last().ok_or(VmError::StackUnderflow)?;
                        self.stack[base + slot] = v;
                    }
                    OP_POP => {
                        self.pop()?;
                    }
                    OP_DUP => {
                        let v = *self.stack.last().ok_or(VmError::StackUnderflow)?;
                        self.stack.push(v);
                    }
                    OP_CALL => {
                        let target = self.read_u16(code);
                        let argc = code[self.pc] as usize;
                        self.pc += 1;
                        let base = self.stack.len().checked_sub(argc).ok_or(VmError::StackUnderflow)?;
                        self.frames.push(Frame { return_pc: self.pc, base });
                        self.pc = target;
                    }
                    OP_RET => {
                        let result = self.pop()?;
                        let frame = self.frames.pop().ok_or(VmError::NoFrame)?;
                        self.stack.truncate(frame.base);
                        self.stack.push(result);
                        self.pc = hint!(frame.return_pc, promote);
                    }
                    OP_HALT => return self.pop(),
                    other => return Err(VmError::BadOpcode(other)),
                }
            }
        }
    }
}

use bvm::*;

/// `fib(n)`, recursive: `CONST n; CALL fib 1; HALT`, then `fib`.
fn fib_program(n: i8) -> Vec<u8> {
    let mut c = vec![OP_CONST, n as u8, OP_CALL, 0, 0, 1, OP_HALT];
    let fib = c.len() as u16;
    c[3..5].copy_from_slice(&fib.to_le_bytes());
    c.extend([OP_LOAD, 0, OP_CONST, 2, OP_LT, OP_JZ, 0, 0, OP_LOAD, 0, OP_RET]);
    let jz = c.len() - 5;
    let rec = c.len() as u16;
    c[jz..jz + 2].copy_from_slice(&rec.to_le_bytes());
    c.extend([OP_LOAD, 0, OP_CONST, 1, OP_SUB, OP_CALL]);
    c.extend(fib.to_le_bytes());
    c.extend([1, OP_LOAD, 0, OP_CONST, 2, OP_SUB, OP_CALL]);
    c.extend(fib.to_le_bytes());
    c.extend([1, OP_ADD, OP_RET]);
    c
}

/// Runs `code` interpreted, through the portal and through
/// `jit::specialize`: the same result (or a panic too) and the same whole
/// machine.
fn check(code: &[u8], max_steps: u64) -> Option<Result<i64, VmError>> {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let mut want_vm = Vm::new(max_steps);
    let want = catch_unwind(AssertUnwindSafe(|| bvm::jit::plain::Vm::run(&mut want_vm, code)));
    for specialize in [false, true] {
        let mut vm = Vm::new(max_steps);
        let got = catch_unwind(AssertUnwindSafe(|| {
            if specialize {
                bvm::jit::specialize::Vm::run(&mut vm, code)
            } else {
                vm.run(code)
            }
        }));
        match (&want, &got) {
            (Ok(w), Ok(g)) => {
                assert_eq!(g, w, "{code:?}, specialize {specialize}");
                assert_eq!(vm, want_vm, "{code:?}, specialize {specialize}");
            }
            // A panic leaves `self` as the split leaves it: the same.
            (Err(_), Err(_)) => assert_eq!(vm, want_vm, "{code:?}, specialize {specialize}"),
            _ => panic!("{code:?}, specialize {specialize}: one panicked, the other did not"),
        }
    }
    want.ok()
}

#[test]
fn recursion_compiles_and_random_programs_agree_with_plain() {
    let fib = fib_program(15);
    assert_eq!(check(&fib, u64::MAX), Some(Ok(610)));
    bvm::jit::config().set_threshold(100);
    let before = bvm::jit::stats();
    for _ in 0..3 {
        assert_eq!(Vm::new(u64::MAX).run(&fib), Ok(610));
    }
    let after = bvm::jit::stats();
    assert!(after.entries > before.entries && after.spills > before.spills, "{after:?}");
    let mut rng = crate::common::Rng(0xb7e_5eed);
    for threshold in [0, 3] {
        bvm::jit::config().set_threshold(threshold);
        for _ in 0..crate::common::how_many(2000) {
            let len = 5 + rng.below(40) as usize;
            let mut c = vec![OP_CONST, 3, OP_CONST, 5, OP_CONST, 7];
            while c.len() < len {
                let op = rng.below(13) as u8;
                c.push(op);
                match op {
                    OP_CONST => c.push(rng.below(9) as u8),
                    OP_JMP | OP_JZ => c.extend((rng.below(len as u64 + 4) as u16).to_le_bytes()),
                    OP_CALL => {
                        c.extend((rng.below(len as u64 + 4) as u16).to_le_bytes());
                        c.push(rng.below(3) as u8);
                    }
                    OP_LOAD | OP_STORE => c.push(rng.below(5) as u8),
                    _ => {}
                }
            }
            c.push(OP_HALT);
            check(&c, 2_000);
        }
    }
}
