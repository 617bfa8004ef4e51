//! Conversions written as trait impls, as Rust VMs decode their bytecode:
//! `impl From<u8> for Op` called as `Op::from(b)` and `b.into()`, and
//! `impl TryFrom<u8>` (with its `type Error`) called as `Op::try_from(b)`
//! and `b.try_into()`, its error mapped by `map_err`. Their methods are the module's functions, compiled
//! with the portal; a `Display` impl beside them stays Rust's, unreported.
//! And the standard library's conversions between numbers: `i64::from(x)`,
//! and operands decoded by `u16::from_le_bytes([lo, hi])` and its kin.
//! Results are compared with `jit::plain`, through the portal and through
//! `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod decoded {
    use jitgen::prelude::*;
    use std::fmt;

    #[derive(Clone, Copy, PartialEq, Debug)]
    pub enum Op {
        Push,
        Add,
        Loop,
        Halt,
    }

    impl From<u8> for Op {
        fn from(b: u8) -> Op {
            match b {
                0 => Op::Push,
                1 => Op::Add,
                2 => Op::Loop,
                _ => Op::Halt,
            }
        }
    }

    /// A narrower decoding: bytes past 3 are not operations.
    #[derive(Clone, Copy, PartialEq, Debug)]
    pub enum Width {
        One,
        Two,
    }

    impl TryFrom<u8> for Width {
        type Error = u8;
        fn try_from(b: u8) -> Result<Self, Self::Error> {
            match b {
                0 | 1 => Ok(Width::One),
                2 | 3 => Ok(Width::Two),
                other => Err(other),
            }
        }
    }

    /// An error carrying the byte that did not decode.
    #[derive(Clone, Copy, PartialEq, Debug)]
    pub enum Fault {
        Bad(u8),
    }

    impl fmt::Display for Op {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "{:?}", self)
        }
    }

    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut pc = 0;
        let mut acc = 0i64;
        let mut i = n;
        loop {
            hint!(global_merge_point);
            let b = hint!(code[pc], concrete);
            let op: Op = b.into();
            pc += 1;
            // The same conversions of bytes known only when running.
            let dynamic = Op::from((acc & 3) as u8);
            let width: Result<Width, u8> = ((acc & 7) as u8).try_into();
            acc += match (dynamic, width) {
                (Op::Add, Ok(Width::Two)) => 3,
                (_, Ok(Width::One)) => 1,
                (_, Err(e)) => e as i64,
                _ => 0,
            };
            // `map_err` with a constructor, and with a closure.
            let fault: Result<Width, Fault> = Width::try_from(b.wrapping_add(3)).map_err(Fault::Bad);
            acc += match fault {
                Ok(w) => w as i64 * 2,
                Err(Fault::Bad(x)) => i64::from(x),
            };
            acc += Width::try_from(b).map_err(|e| e as i64 * 3).map_or_else(|e| e, |w| w as i64);
            match op {
                Op::Push => acc += 5 + Width::try_from(b).map_or(9, |w| w as i64),
                Op::Add => acc = acc.wrapping_mul(3) & 0xffff,
                Op::Loop => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                    }
                }
                Op::Halt => return acc,
            }
        }
    }
}

fn check(code: &[u8], n: i64) {
    let want = decoded::jit::plain::run(code, n);
    assert_eq!(decoded::run(code, n), want, "{code:?} {n}");
    assert_eq!(decoded::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

#[test]
fn conversions_by_trait_impls_compile_and_agree_with_plain() {
    decoded::jit::config().set_threshold(0);
    for n in [1i64, 4, 30] {
        check(&[0, 1, 0, 2, 3], n);
    }
    assert!(decoded::jit::left_to_rust().is_empty(), "{:?}", decoded::jit::left_to_rust());
    assert!(decoded::jit::stats().compilations > 0, "{:?}", decoded::jit::last_decline());
    assert_eq!(decoded::Op::Add.to_string(), "Add");
    // A known byte decodes while compiling: no call of the decoder remains.
    let listing = decoded::jit::specialize::run(&[0, 3]).listing().to_string();
    assert!(!listing.contains("call"), "{listing}");
}

#[test]
fn random_programs_decoding_by_trait_impls_agree_with_plain() {
    decoded::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xc0_4e47);
    for _ in 0..crate::common::how_many(200) {
        let len = rng.below(8) as usize;
        let mut code: Vec<u8> = (0..len).map(|_| rng.below(5) as u8).collect();
        code.extend([2, 3]);
        check(&code, 1 + rng.below(20) as i64);
    }
}

#[jit_interpreter]
mod operands {
    use jitgen::prelude::*;

    /// Ops with operands in the bytes after them: 0 lo hi adds a
    /// little-endian u16, 1 hi lo multiplies by a big-endian i16, 2 k mixes a
    /// u32 made of bytes known only when running, 3 loops while positive,
    /// else returns.
    pub fn run(code: &[u8], n: i64) -> i64 {
        let mut pc = 0;
        let mut acc = 0i64;
        let mut i = n;
        loop {
            hint!(global_merge_point);
            let op = hint!(code[pc], concrete);
            match op {
                0 => {
                    acc += i64::from(u16::from_le_bytes([code[pc + 1], code[pc + 2]]));
                    pc += 3;
                }
                1 => {
                    let k = i16::from_be_bytes([code[pc + 1], code[pc + 2]]);
                    acc = acc.wrapping_mul(i64::from(k)) & 0xff_ffff;
                    pc += 3;
                }
                2 => {
                    let b = (acc & 0xff) as u8;
                    let w = u32::from_le_bytes([b, b ^ 0x5a, 1, code[pc + 1]]);
                    acc = (acc + i64::from(w) + i64::from(b > 7) + f64::from(b) as i64) & 0xffff_ffff;
                    pc += 2;
                }
                3 => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                    } else {
                        pc += 1;
                    }
                }
                _ => return acc,
            }
        }
    }
}

fn check_operands(code: &[u8], n: i64) {
    let want = operands::jit::plain::run(code, n);
    assert_eq!(operands::run(code, n), want, "{code:?} {n}");
    assert_eq!(operands::jit::specialize::run(code).call(n), want, "{code:?} {n}");
}

#[test]
fn operands_decoded_from_bytes_compile_and_agree_with_plain() {
    operands::jit::config().set_threshold(0);
    check_operands(&[0, 0x34, 0x12, 1, 0xff, 0xfe, 2, 9, 3, 9], 5);
    assert!(operands::jit::left_to_rust().is_empty(), "{:?}", operands::jit::left_to_rust());
    // Operands known while compiling are constants.
    let listing = operands::jit::specialize::run(&[0, 0x34, 0x12, 9]).listing().to_string();
    assert!(listing.contains("const.i64 4660") && !listing.contains("call"), "{listing}");
    let mut rng = crate::common::Rng(0xb17e5);
    for _ in 0..crate::common::how_many(200) {
        let mut code = vec![];
        for _ in 0..rng.below(6) {
            match rng.below(3) {
                0 => code.extend([0, rng.below(256) as u8, rng.below(256) as u8]),
                1 => code.extend([1, rng.below(256) as u8, rng.below(256) as u8]),
                _ => code.extend([2, rng.below(256) as u8]),
            }
        }
        code.extend([3, 9]);
        check_operands(&code, 1 + rng.below(12) as i64);
    }
}
