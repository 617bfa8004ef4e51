//! Constants whose initializers are not literals, as a new user writes
//! them: scalars computed from other constants (`1 << SHIFT`, an impl's
//! `Self::BASE * 1000`), and tables (`const WEIGHTS: [i64; 5] = [..]`)
//! indexed, read with `get` and measured with `len`, with a green index
//! and a red one, in bounds and past the end; and a `TryFrom<u8>` decoder
//! whose table lives in its body, as decoders are written; and bytes
//! matched against consts computed from an operation and from literals. Results, panics
//! and their messages are compared with `jit::plain`, through the portal
//! and through `jit::specialize`.

use jitgen::prelude::*;

#[jit_interpreter]
mod tables {
    use jitgen::prelude::*;

    pub const SHIFT: u32 = 4;
    pub const SCALE: i64 = 1 << SHIFT;
    pub const STEP: i64 = SCALE * 3 + 1;
    /// Weights by argument, one computed from another constant.
    pub const WEIGHTS: [i64; 5] = [3, -1, SCALE, 7 * 2, -(SCALE / 2)];

    #[derive(Clone, Copy, PartialEq, Debug)]
    #[repr(u8)]
    pub enum Op {
        Add,
        Mul,
        Weigh,
        Peek,
        Index,
        Jump,
        Halt,
    }

    /// Bytes past the operations: one computed from an operation, one
    /// folded from literals; both matched as patterns.
    pub const OP_SKIP: u8 = Op::Halt as u8 + 3;
    pub const OP_NOP: u8 = (1 << 3) + 2;

    impl Op {
        pub const LIMIT: i64 = Self::BASE * 1000 + 7;
        pub const BASE: i64 = 1_000;
    }

    /// A byte that names no operation.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct BadOp(pub u8);

    impl TryFrom<u8> for Op {
        type Error = BadOp;

        fn try_from(b: u8) -> Result<Op, BadOp> {
            const ALL: [Op; 7] = [Op::Add, Op::Mul, Op::Weigh, Op::Peek, Op::Index, Op::Jump, Op::Halt];
            ALL.get(b as usize).copied().ok_or(BadOp(b))
        }
    }

    pub fn run(code: &[u8], mut acc: i64, n: i64) -> Result<i64, BadOp> {
        let mut pc = 0;
        let mut i = n;
        loop {
            hint!(global_merge_point);
            let byte = hint!(code[pc], concrete);
            match byte {
                OP_SKIP => {
                    pc += 4;
                    continue;
                }
                OP_NOP => acc += OP_NOP as i64,
                _ => {}
            }
            let op = Op::try_from(byte)?;
            let arg = hint!(code[pc + 1], concrete) as usize;
            pc += 2;
            match op {
                // A green index, in bounds.
                Op::Add => acc = acc.wrapping_add(WEIGHTS[arg % WEIGHTS.len()]),
                Op::Mul => acc = acc.wrapping_mul(STEP) % Op::LIMIT,
                // A red index, in bounds.
                Op::Weigh => acc += WEIGHTS[acc.rem_euclid(WEIGHTS.len() as i64) as usize],
                // A green index that may be past the end, and a red one.
                Op::Peek => {
                    acc += WEIGHTS.get(arg).copied().unwrap_or(-5);
                    if let Some(&w) = WEIGHTS.get((acc & 7) as usize) {
                        acc ^= w;
                    }
                }
                // A red index that may be past the end: the panic indexing gives.
                Op::Index => acc += WEIGHTS[(acc.rem_euclid(64) as usize) >> arg],
                Op::Jump => {
                    i -= 1;
                    if i > 0 {
                        pc = 0;
                    }
                }
                Op::Halt => return Ok(acc),
            }
        }
    }
}

type Outcome = Result<Result<i64, tables::BadOp>, Option<String>>;

fn outcome(f: impl FnOnce() -> Result<i64, tables::BadOp>) -> Outcome {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|p| p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())))
}

/// The same result, or the same panic, interpreted, through the portal and
/// through `jit::specialize`.
fn check(code: &[u8], acc: i64, n: i64) -> Outcome {
    let want = outcome(|| tables::jit::plain::run(code, acc, n));
    assert_eq!(outcome(|| tables::run(code, acc, n)), want, "{code:?} {acc} {n}");
    let r = tables::jit::specialize::run(code);
    assert_eq!(outcome(|| r.call(acc, n)), want, "{code:?} {acc} {n}");
    want
}

#[test]
fn const_tables_and_computed_consts_fold_and_agree_with_plain() {
    tables::jit::config().set_threshold(0);
    assert_eq!(tables::Op::LIMIT, 1_000_007);
    // Every op, with in-bounds arguments.
    let code = [0, 2, 1, 0, 2, 0, 3, 1, 3, 9, 4, 4, 5, 0, 6, 0];
    for (acc, n) in [(1, 1), (5, 3), (-40, 20)] {
        assert!(check(&code, acc, n).is_ok());
    }
    // A byte that names no operation, and an index past the end.
    assert_eq!(check(&[0, 1, 8, 0], 1, 1), Ok(Err(tables::BadOp(8))));
    assert_eq!(check(&[0, 1, 9, 0, 8, 0, 10, 0], 1, 1), Ok(Err(tables::BadOp(10))));
    let past = check(&[4, 0, 6, 0], 63, 1).unwrap_err().unwrap();
    assert!(past.contains("index out of bounds") && past.contains("63"), "{past}");
    assert!(tables::jit::left_to_rust().is_empty(), "{:?}", tables::jit::left_to_rust());
    assert!(tables::jit::stats().compilations > 0, "{:?}", tables::jit::last_decline());
    // Green bytes decode while compiling and green indices read their
    // element: no call, and none of the table's elements is loaded.
    let listing = tables::jit::specialize::run(&[0, 3, 1, 0, 3, 1, 6, 0]).listing().to_string();
    assert!(!listing.contains("call") && !listing.contains("load"), "{listing}");
}

#[test]
fn random_programs_reading_const_tables_agree_with_plain() {
    tables::jit::config().set_threshold(0);
    let mut rng = crate::common::Rng(0xc0_45);
    for _ in 0..crate::common::how_many(300) {
        let len = rng.below(6) as usize;
        let mut code = vec![];
        for _ in 0..len {
            // Mostly valid operations; now and then a byte past the table.
            let op = if rng.below(20) == 0 { 7 + rng.below(4) as u8 } else { rng.below(5) as u8 };
            code.extend([op, rng.below(7) as u8]);
        }
        code.extend([5, 0, 6, 0]);
        let _ = check(&code, rng.below(200) as i64 - 100, 1 + rng.below(12) as i64);
    }
}
