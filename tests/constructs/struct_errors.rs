//! An error that is a struct of scalars, neither `Copy` nor holding a
//! `String` (`VmError { pc, code }`, as a new user writes it), returned in a
//! `Result` through `?`, and jumps and arithmetic that saturate
//! (`saturating_sub`, `saturating_mul`). Before, nothing of such a module
//! compiled: residual code could not give the `Result` back. Results and
//! errors are compared with `jit::plain`, through the portal and through
//! `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod vm {
    use jitgen::prelude::*;

    #[derive(Debug, Clone, PartialEq)]
    pub struct VmError {
        pub pc: usize,
        pub code: u8,
        pub acc: i64,
    }

    fn fail(pc: usize, code: u8, acc: i64) -> Result<i64, VmError> {
        Err(VmError { pc, code, acc })
    }

    /// Ops, each with one operand `k`: 0 add k; 1 subtract k, an error
    /// below zero; 2 fail with k; 3 return acc; 5 and 6 saturating
    /// arithmetic; others jump back k pairs while acc is odd, halving it.
    /// Each turn burns a unit of `fuel`: an error when none is left.
    pub fn run(code: &[u8], mut acc: i64, mut fuel: u32) -> Result<i64, VmError> {
        let mut pc = 0;
        loop {
            hint!(global_merge_point);
            if pc + 1 >= code.len() {
                return Err(VmError { pc, code: 255, acc });
            }
            if fuel == 0 {
                return Err(VmError { pc, code: 254, acc });
            }
            fuel -= 1;
            let op = hint!(code[pc], concrete);
            let k = hint!(code[pc + 1], concrete);
            pc += 2;
            match op {
                0 => acc = acc.wrapping_add(k as i64),
                1 => {
                    acc = acc.wrapping_sub(k as i64);
                    if acc < 0 {
                        return Err(VmError { pc, code: 1, acc });
                    }
                }
                2 => {
                    acc = fail(pc, k, acc)?;
                }
                3 => return Ok(acc),
                5 => acc = acc.saturating_mul(k as i64 * 4_000_000_000),
                6 => acc = acc.saturating_sub(i64::MAX - k as i64),
                _ => {
                    if acc % 2 != 0 {
                        acc /= 2;
                        pc = pc.saturating_sub(2 * (k as usize + 1));
                    }
                }
            };
        }
    }
}

fn check(code: &[u8], acc: i64) -> Result<i64, vm::VmError> {
    let fuel = 200;
    let want = vm::jit::plain::run(code, acc, fuel);
    assert_eq!(vm::run(code, acc, fuel), want, "{code:?} {acc}");
    let r = vm::jit::specialize::run(code);
    assert_eq!(r.call(acc, fuel), want, "{code:?} {acc}");
    want
}

#[test]
fn a_struct_error_comes_back_from_compiled_code() {
    vm::jit::config().set_threshold(0);
    assert_eq!(check(&[0, 5, 1, 3, 3, 0], 1), Ok(3));
    assert_eq!(check(&[0, 5, 1, 9, 3, 0], 1), Err(vm::VmError { pc: 4, code: 1, acc: -3 }));
    assert_eq!(check(&[0, 2, 2, 7, 3, 0], 1), Err(vm::VmError { pc: 4, code: 7, acc: 3 }));
    assert_eq!(check(&[0, 2], 1), Err(vm::VmError { pc: 2, code: 255, acc: 3 }));
    assert!(vm::jit::left_to_rust().is_empty(), "{:?}", vm::jit::left_to_rust());
    assert!(vm::jit::stats().compilations > 0, "{:?}", vm::jit::last_decline());
    assert_eq!(vm::jit::stats().declined, 0, "{:?}", vm::jit::last_decline());
}

#[test]
fn random_programs_failing_with_struct_errors_agree_with_plain() {
    vm::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0x5e_77);
    let mut failed = 0;
    for _ in 0..crate::common::how_many(300) {
        let mut code = vec![];
        for _ in 0..1 + rng.below(6) {
            code.extend([rng.below(7) as u8, rng.below(9) as u8]);
        }
        if rng.below(4) != 0 {
            code.extend([3, 0]);
        }
        failed += check(&code, rng.below(40) as i64 - 5).is_err() as usize;
    }
    assert!(failed > 0);
}
